#!/usr/bin/env bash
# Two test tiers side by side (make test): BESIDE runs in the background, its output kept in
# LOG and printed whole, under a header, once both ended; MAIN runs in the foreground, its
# output live. The exit status is MAIN's failure, else BESIDE's, else 0, and each is named.
#   beside.sh LOG 'BESIDE COMMAND' MAIN COMMAND...
# The tier beside ends its log with its own time (the header names when both had ended).
# Why: the QEMU tiers (PXE, VM) keep about one core busy under TCG while the lab tier waits
# on its containers much of the time; on a 2-core machine they fit beside it (README, make test).
set -uo pipefail
log=${1:?LOG} beside=${2:?BESIDE COMMAND}
shift 2
[[ $# -gt 0 ]] || { echo "beside: no MAIN command" >&2; exit 2; }

mkdir -p "$(dirname "$log")"
start=$SECONDS
# its own process group (setsid), so that an interrupt reaches all of it, as SIGINT: pytest
# then tears down what it started (namespaces, guests)
# (a background job of a non-interactive shell starts with SIGINT ignored: restore it)
setsid env --default-signal=INT bash -c "($beside)"'
rc=$?; echo "beside: its own time: $SECONDS s (exit $rc)"; exit $rc' >"$log" 2>&1 &
bg=$!
trap 'kill -INT -- -$bg 2>/dev/null; wait $bg; exit 130' INT TERM

"$@"
main_rc=$?
main_s=$((SECONDS - start))
wait $bg
bg_rc=$?
trap - INT TERM

echo
echo "=== beside the main tier: $beside (exit $bg_rc, $((SECONDS - start)) s; the main tier" \
     "took $main_s s) ==="
cat "$log"
echo "=== end of: $beside ==="
if [[ $main_rc -ne 0 ]]; then
  echo "beside: the main tier failed (exit $main_rc): $*" >&2
  exit "$main_rc"
fi
if [[ $bg_rc -ne 0 ]]; then
  echo "beside: the tier beside it failed (exit $bg_rc): $beside" >&2
  exit "$bg_rc"
fi
