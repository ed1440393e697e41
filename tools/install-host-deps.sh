#!/usr/bin/env bash
# Install the host packages fleet needs on Debian 12 / Ubuntu 24.04, plus any package named
# as an argument (tools/install-lab-deps.sh, install-pxe-deps.sh, install-vm-deps.sh pass
# theirs). Idempotent: installs only what is missing; runs apt-get update at most once.
# FLEET_APT_NO_START=1: packages' services are kept from starting during this install
# (policy-rc.d), for nginx and dnsmasq that the tests run only inside a network namespace.
set -euo pipefail

need=()
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v dnsmasq >/dev/null 2>&1 || need+=(dnsmasq-base)   # `dnsmasq --test` in the tests
command -v make >/dev/null 2>&1 || need+=(make)
command -v ipmitool >/dev/null 2>&1 || need+=(ipmitool)   # the IPMI fallback of fleet reinstall (tests/bmc)
# job_copy snapshot's hook, run for real on a loop-mounted btrfs (tests/salt/test_codesync_export.py)
command -v mkfs.btrfs >/dev/null 2>&1 || need+=(btrfs-progs)
# burn-in's checks, run for real at short durations (tests/burnin, tests/swarm/test_burnin.py);
# smartctl's package would start smartd on this host: its service is kept from starting
for bin in stress-ng memtester fio; do command -v "$bin" >/dev/null 2>&1 || need+=("$bin"); done
[[ -x /usr/sbin/smartctl ]] || { need+=(smartmontools); FLEET_APT_NO_START=1; }
# the parsers the hostile-inventory property test runs the rendered files through
# (tests/unit/test_hostile.py): nginx -t, grub-script-check; debconf-set-selections and
# systemd-analyze come with every Debian/Ubuntu
# (only its binary is used: the package's service must not start on this host)
command -v nginx >/dev/null 2>&1 || { need+=(nginx-light); FLEET_APT_NO_START=1; }
command -v grub-script-check >/dev/null 2>&1 || need+=(grub-common)
# the provisioning role's installer media and apt cache (tests/salt/test_provisioning_media.py):
# xorriso builds and reads the stand-in ISO; apt-cacher-ng's parser checks the rendered
# config and the daemon runs in the foreground on a scratch port (its service must not run)
command -v xorriso >/dev/null 2>&1 || need+=(xorriso)
# the code sync (tests/salt/test_codesync_export.py): the rendered rsyncd.conf under the
# real rsync daemon, sfdisk for a partition table on a loop device the mkfs guard must spare
command -v rsync >/dev/null 2>&1 || need+=(rsync)
command -v sfdisk >/dev/null 2>&1 || need+=(fdisk)
[[ -x /usr/sbin/apt-cacher-ng ]] || { need+=(apt-cacher-ng); FLEET_APT_NO_START=1; ACNG_NEW=1; }
# the monitoring role's checks (tests/monitoring, tests/salt/test_monitoring_checks.py):
# promtool checks and unit-tests the alert rules, amtool and the exporters check their
# configs and flags, node_exporter reads the collectors' files and a fixture sysfs. Only
# their binaries are used: none of their services may run on this host (no Prometheus
# on 9090 by accident), so they are installed without starting and then disabled.
for bin in promtool:prometheus amtool:prometheus-alertmanager \
    prometheus-node-exporter:prometheus-node-exporter \
    prometheus-blackbox-exporter:prometheus-blackbox-exporter; do
  command -v "${bin%%:*}" >/dev/null 2>&1 || { need+=("${bin#*:}"); FLEET_APT_NO_START=1; PROM_NEW=1; }
done
# the fleet page's test (tests/page): real headless Chromium drives the page (Debian 12's
# package; on Ubuntu 24.04 the package of that name installs the snap, which needs snapd)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# the site package repository (fleet repo, docs/repo.md): reprepro keeps it, gpg signs it
command -v reprepro >/dev/null 2>&1 || need+=(reprepro)
command -v gpg >/dev/null 2>&1 || need+=(gnupg)
# fleet backup and fleet restore (tests/backup): the real restic in temp directories
command -v restic >/dev/null 2>&1 || need+=(restic)
# an sftp backup destination (tests/backup/test_sftp.py): restic over ssh to Debian's sshd
# run by the test on 127.0.0.1; only its binary is used, the host's ssh service is not
[[ -x /usr/sbin/sshd ]] || { need+=(openssh-server); FLEET_APT_NO_START=1; SSHD_NEW=1; }
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done

if ((${#need[@]} == 0)); then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-host-deps: missing packages: ${need[*]}; run as root or: sudo apt-get install ${need[*]}" >&2
  exit 1
fi
if [[ ${FLEET_APT_NO_START:-0} == 1 && ! -e /usr/sbin/policy-rc.d ]]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
echo "install-host-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# installed only for their binaries, a parser or a foreground test run: never as services
here=$(dirname "$0")
if [[ ${ACNG_NEW:-0} == 1 ]]; then bash "$here/disable-host-service.sh" apt-cacher-ng; fi
if [[ ${SSHD_NEW:-0} == 1 ]]; then bash "$here/disable-host-service.sh" ssh.service ssh.socket; fi
if [[ ${PROM_NEW:-0} == 1 ]]; then
  bash "$here/disable-host-service.sh" --mask prometheus prometheus-alertmanager \
    prometheus-node-exporter prometheus-blackbox-exporter
fi
