#!/usr/bin/env bash
# Host packages the lab (make lab, tests/lab) needs, as root: podman with runc (crun cannot
# run on hybrid cgroups), netavark + aardvark-dns for the lab network (netavark runs
# iptables), debootstrap for the minion image, chrony for the lab's NTP server on the
# gateway (tools/fleet/lab/ntp.py: its own config; the package's own service is not used).
set -euo pipefail
exec bash "$(dirname "$0")/install-host-deps.sh" \
  podman runc debootstrap netavark aardvark-dns iptables iproute2 tar chrony
