#!/usr/bin/env bash
# Keep packages' services off this host: the tests use only their binaries (or run them in
# a network namespace). Usage: disable-host-service.sh [--mask] SERVICE...
# Under systemd: disable --now (and mask with --mask); on a host without systemd as PID 1
# (a container, some CI machines): the SysV link is disabled. Never fails the install: a
# service that is not there, or already off, is what was wanted.
set -uo pipefail
mask=0
if [[ ${1:-} == --mask ]]; then mask=1; shift; fi
for svc in "$@"; do
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    systemctl disable --now "$svc" >/dev/null 2>&1 || true
    if ((mask)); then systemctl mask "$svc" >/dev/null 2>&1 || true; fi
  else
    update-rc.d "${svc%.service}" disable >/dev/null 2>&1 || true
  fi
done
exit 0
