#!/usr/bin/env bash
# make test's own podman storage, so that every test run meets the lab as a new machine
# does (no image, layer or container of an earlier run; docs/lab.md):
#   fresh DIR   remove what an earlier run left in DIR, write DIR/storage.conf
#   clean DIR   remove DIR (its containers and images first)
# `make test` exports CONTAINERS_STORAGE_CONF=DIR/storage.conf to every step; `make lab`
# keeps using the machine's storage and its cached images.
set -euo pipefail
action=${1:?fresh|clean} dir=${2:?DIR}
case $dir in /*) ;; *) echo "test-storage: $dir is not absolute" >&2; exit 2 ;; esac

wipe() {
  if [[ -f $dir/storage.conf ]] && command -v podman >/dev/null 2>&1; then
    export CONTAINERS_STORAGE_CONF=$dir/storage.conf
    podman --runtime runc rm -a -f >/dev/null 2>&1 || true
    podman rmi -a -f >/dev/null 2>&1 || true
  fi
  # layers a killed run left mounted
  awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$dir"
}

case $action in
  fresh)
    wipe
    mkdir -p "$dir/storage" "$dir/run"
    cat > "$dir/storage.conf" <<CONF
# Written by tools/test-storage.sh for one make test run; removed at its end.
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
CONF
    echo "make test: podman storage of this run: $dir (empty)"
    ;;
  clean)
    wipe
    ;;
  *) echo "test-storage: unknown action $action" >&2; exit 2 ;;
esac
