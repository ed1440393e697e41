#!/bin/sh
# Managed by Salt (codesync.server). Do not edit.
# rsync's pre-xfer exec of the module (compute.codesync.job_copy: snapshot): a push to
# branches/caches/<job>/xx/ (miniray's command, --copy-dest=/xx) finds its destination
# already made, as a btrfs snapshot of xx/ (constant time, whatever the file count), and
# rsync then sends and writes only what differs from xx/. Any other request is left to
# rsync as it is. Run by the daemon as root before it changes root or user; the request
# is the client's: <job> must be one plain name, no component may be a symbolic link, and
# the directory and snapshot are made as the module's user (argument 1), never as root.
# Usage (rsyncd.conf): pre-xfer exec = THIS USER CACHES   (CACHES: branches/caches)
set -eu
user=$1
caches=$2
export LC_ALL=C
root=${RSYNC_MODULE_PATH:?}
request=${RSYNC_REQUEST:?}
rest=${request#"$RSYNC_MODULE_NAME/$caches/"}
[ "$rest" != "$request" ] || exit 0
job=${rest%%/*}
case $rest in "$job/xx" | "$job/xx/") ;; *) exit 0 ;; esac
case $job in '' | . | .. | *[!A-Za-z0-9._-]*) exit 0 ;; esac
dest=$root/$caches/$job
for path in "$root/xx" "$root/branches" "$root/$caches" "$dest" "$dest/xx"; do
    if [ -L "$path" ]; then
        echo "code sync: refused: $path is a symbolic link"
        exit 1
    fi
done
[ ! -e "$dest/xx" ] || exit 0
uid=$(id -u -- "$user")
gid=$(id -g -- "$user")
as_user() { setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"; }
cd -- "$root"
if ! out=$(as_user mkdir -p -- "$caches/$job" 2>&1 &&
           as_user btrfs subvolume snapshot -- xx "$caches/$job/xx" 2>&1); then
    echo "code sync: no snapshot of xx/ for $job: $out"
    exit 1
fi
