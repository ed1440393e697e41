"""The installer's side of ``fleet reinstall``'s key rotation, as two late-commands shared
by the Ubuntu autoinstall and the Debian preseed (docs/secrets.md, "Install tokens").

``fetch_key`` fetches the node's one-time token from the provisioning host
(``/state/<mac>.token``: published by ``fleet reinstall`` when it arms the install, in a
directory no TFTP root reaches, served by nginx to that node's own address only), then
the node's new minion key from the master's endpoint (``GET /v1/key/<node>``,
``Authorization: Bearer <token>``; the endpoint also checks the address), and writes
``minion.pem`` (0400) and the matching ``minion.pub`` into the target. Without a token
it asks the endpoint (``/v1/status/<node>``): no reinstall armed (``200 none``, or the
endpoint's door refusing an address that is not an armed node's, ``403``), or no endpoint
at all (connection refused, curl exit 7), is a plain ``fleet pxe set NODE install`` and
changes nothing (the minion makes its own key at first start, pending on the master); a
reinstall in progress means someone else took the token, and the install fails.

Silence is never success: an empty reply, a reset, a timeout or a ``503`` is retried for
``RETRY_SECONDS`` and then fails the install loudly, for every request to the endpoint
(status, key, the master's fingerprint, the callback). An armed install never exits 0
without its key, nor leaves its minion unpinned because ``/v1/finger`` did not answer.

``callback`` (the last late-command) posts ``/v1/done/<node>`` with the same token and,
as the body, a signature with the node's new key over ``fleet-install-done:<node>:<token>``
(the proof that the caller holds that key: a bare token is refused).

Any refusal fails the late-command loudly: the reason on stderr and the console, and an
error report to ``/v1/error/<node>`` (with the token: without one it is refused), which
stops the reinstall (key revoked, boot mode
local, the claimant's address in the journal).

Both are single ``sh -c`` commands that use only POSIX sh and busybox built-ins in the
installer's environment; ``curl`` is the installer's own (Ubuntu) or the target's
(Debian: ``chroot /target curl``, as d-i has no curl), ``openssl`` the target's.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from fleet.inventory.model import Inventory, Node
from fleet.render.bootstrap import http_base

TARGET = "/target"
TOKEN_COPY = "/tmp/fleet-install-token"  # the installer's tmpfs: between late-commands
PKI = "/etc/salt/pki/minion"
RETRY_SECONDS = 300  # how long the installer asks an endpoint that gives no answer
ATTEMPT_SECONDS = 30  # each attempt's limit (curl --max-time)


def token_name(node: Node) -> str:
    """The token's file name in ``site.pxe_state`` (next to the node's boot-mode links)."""
    return node.mac.replace(":", "-") + ".token"


def token_url(inv: Inventory, node: Node) -> str:
    return f"{http_base(inv)}/state/{token_name(node)}"


def endpoint(inv: Inventory) -> str:
    """The master's key/callback endpoint (``fleet reinstall``, ``site.salt.reinstall_port``)."""
    site = inv.raw.site
    return f"http://{inv.master_address}:{site.salt.reinstall_port}"


def tokens_dir(inv: Inventory) -> str:
    """Where ``fleet reinstall`` publishes the tokens on the provisioning host, with its
    "/" (:func:`fleet.pxe.state.tokens_dir` of ``site.pxe_state``: its sibling, out of
    TFTP's reach)."""
    from fleet.pxe.state import tokens_dir as beside

    return f"{beside(Path(inv.raw.site.pxe_state))}/"


def token_path(inv: Inventory, node: Node) -> str:
    """Where ``fleet reinstall`` publishes ``node``'s token on the provisioning host."""
    return tokens_dir(inv) + token_name(node)


def _reply_file(curl: str, name: str) -> tuple[str, str]:
    """A scratch file as curl names it and as this shell does (curl in a chroot of the
    target, for Debian, sees ``/tmp`` under ``$r``)."""
    inside = f"/tmp/fleet-{name}"
    return inside, (f"$r{inside}" if curl.startswith("chroot ") else inside)


def _prelude(inv: Inventory, node: Node, curl: str) -> list[str]:
    """Shell functions both late-commands share: ``say`` (stderr and the console),
    ``fail`` (say, report to the master's ``/v1/error/<node>`` with the token, exit 1)
    and ``ask URL [CURL ARGS]``: the endpoint's HTTP status in ``$c`` and its body in
    ``$b``, or ``c=refused`` when nothing listens (curl exit 7, the only "no endpoint"),
    else ``c=none`` after ``RETRY_SECONDS`` of no answer (an empty reply, a reset, a
    timeout) or ``503`` (an address over its quota); ``k=1`` retries a refused
    connection too."""
    inside, outside = _reply_file(curl, "reply")
    return [
        f"r={TARGET}", f"f={TOKEN_COPY}", f"ep={shlex.quote(endpoint(inv))}",
        f"n={shlex.quote(node.hostname)}", "t=", f"w={RETRY_SECONDS}",
        f"mt={ATTEMPT_SECONDS}", f"b={outside}", "k=",
        'say() { echo "fleet: $*" >&2; { echo "fleet: $*" > /dev/console; } 2>/dev/null '
        "|| true; }",
        f'fail() {{ say "$1"; {curl} -fsS --max-time $mt -o /dev/null -X POST '
        '-H "Authorization: Bearer $t" '
        "-H 'Content-Type: text/plain' --data-binary \"$1\" \"$ep/v1/error/$n\" >&2 || "
        'say "the error report to the master failed too"; exit 1; }',
        'ask() { u=$1; shift; e=$(($(date +%s) + w)); while :; do rm -f "$b"; '
        f"c=$({curl} -sS -o {inside} -w '%{{http_code}}' --connect-timeout 10 "
        '--max-time $mt "$@" "$u"); x=$?; case "$x:$c" in 7:*) [ -n "$k" ] || '
        "{ c=refused; return 0; };; 0:503) ;; 0:*) return 0;; esac; "
        'if [ "$(date +%s)" -ge "$e" ]; then c=none; return 0; fi; sleep 3; done; }',
    ]


def fetch_key(inv: Inventory, node: Node, curl: str) -> str:
    """The late-command that installs the rotated minion key, if a reinstall is armed."""
    d = f"$r{PKI}"
    script = "; ".join([
        *_prelude(inv, node, curl), "rm -f $f",
        f"t=$({curl} -fsS --max-time 30 {shlex.quote(token_url(inv, node))}) || t=",
        'if [ -z "$t" ]; then ask "$ep/v1/status/$n"; case "$c" in '
        'refused) echo "fleet: no install token, and no endpoint on the master: the '
        'minion makes its own key, pending on the master"; exit 0;; '
        '200|403) rm -f "$b"; echo "fleet: no install token (no reinstall armed for $n): '
        'the minion makes its own key, pending on the master"; exit 0;; '
        'none) fail "no install token for $n, and the master\'s endpoint gave no answer '
        'within ${w}s: not known to be a plain install, stopping";; esac; '
        'fail "no install token for $n, but the master has a reinstall in progress for it '
        '(status $c: $(head -c 200 "$b")): the token was taken by someone else"; fi',
        "(umask 077; printf %s \"$t\" > $f)",
        f"mkdir -p {d}", f"chmod 0700 {d}", "umask 077",
        'ask "$ep/v1/key/$n" -H "Authorization: Bearer $t"',
        'case "$c" in 200) ;; refused) fail "the master\'s endpoint refused the connection '
        'while the reinstall is armed: no key, stopping";; none) fail "the master\'s '
        'endpoint gave no key within ${w}s (no answer): stopping";; '
        '*) m=$(head -c 300 "$b" 2>/dev/null); rm -f "$b"; '
        'fail "the master refused the key (HTTP $c): $m";; esac',
        f'mv "$b" {d}/minion.pem', f"chmod 0400 {d}/minion.pem", "umask 022",
        f"chroot $r openssl rsa -in {PKI}/minion.pem -pubout -out {PKI}/minion.pub",
        f"chmod 0644 {d}/minion.pub",
        # pin the master that served the key (base.minion keeps the same value); no
        # answer is no reason to leave the minion unpinned
        'ask "$ep/v1/finger/$n" -H "Authorization: Bearer $t"',
        'm=$(head -c 200 "$b" 2>/dev/null); rm -f "$b"',
        'case "$c" in 200) case "$m" in \'\'|*[!0-9a-f:]*) fail "the master\'s key '
        'fingerprint is not one: the minion would be left unpinned, stopping";; esac; '
        "echo \"master_finger: '$m'\" > $r/etc/salt/minion.d/fleet-master-finger.conf;; "
        '404) say "the master has no key fingerprint on record: the minion is not pinned '
        'here (base.minion pins the master it authenticated)";; '
        '*) fail "the master\'s key fingerprint did not come (HTTP $c): the minion would '
        'be left unpinned, stopping";; esac',
        "echo \"fleet: minion key installed\"",
    ])
    return "sh -c " + shlex.quote(script)


def callback(inv: Inventory, node: Node, curl: str) -> str:
    """The last late-command: tells the master the install finished (boot mode local),
    with a signature by the node's new key as the proof."""
    sig_in, sig = _reply_file(curl, "done.sig")
    script = "; ".join([
        *_prelude(inv, node, curl),
        'if [ ! -s $f ]; then echo "fleet: no reinstall in progress: no callback"; exit 0; fi',
        "t=$(cat $f)",
        "printf 'fleet-install-done:%s:%s' \"$n\" \"$t\" | chroot $r openssl dgst -sha256 "
        f"-sign {PKI}/minion.pem > {sig} || "
        'fail "could not sign the install-finished callback with the node\'s key"',
        # retried while nothing answers (a repeat of a callback that was taken is
        # answered ok), a refused connection too; a refusal (4xx) is final
        "k=1",
        'ask "$ep/v1/done/$n" -X POST -H "Authorization: Bearer $t" '
        f"-H 'Content-Type: application/octet-stream' --data-binary @{sig_in}",
        'case "$c" in 200) ;; none) fail "the master\'s endpoint did not answer the '
        'install-finished callback within ${w}s; stopping";; '
        '*) fail "the install-finished callback was refused (HTTP $c): '
        '$(head -c 300 "$b"); stopping";; esac',
        f'rm -f $f {sig} "$b"',
    ])
    return "sh -c " + shlex.quote(script)
