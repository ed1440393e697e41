#!/usr/bin/env bash
# Host packages the lab (make lab, tests/lab) needs, as root: podman with runc (crun cannot
# run on hybrid cgroups), netavark + aardvark-dns for the lab network (netavark runs
# iptables), debootstrap for the minion image, chrony for the lab's NTP server on the
# gateway (tools/fleet/lab/ntp.py: its own config; the package's own service is not used),
# curl for the Ubuntu image's archive probe, ca-certificates for its pip step (the host's
# CA bundle is copied into the root for it).
set -euo pipefail
exec bash "$(dirname "$0")/install-host-deps.sh" \
  podman runc debootstrap netavark aardvark-dns iptables iproute2 tar chrony curl \
  ca-certificates
