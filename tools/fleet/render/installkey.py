"""The installer's side of ``fleet reinstall``'s key rotation, as two late-commands shared
by the Ubuntu autoinstall and the Debian preseed (docs/secrets.md, "Install tokens").

``fetch_key`` fetches the node's one-time token from the provisioning host
(``/state/<mac>.token``: published by ``fleet reinstall`` when it arms the install, in a
directory no TFTP root reaches, served by nginx to that node's own address only), then
the node's new minion key from the master's endpoint (``GET /v1/key/<node>``,
``Authorization: Bearer <token>``; the endpoint also checks the address), and writes
``minion.pem`` (0400) and the matching ``minion.pub`` into the target. Without a token
it asks the endpoint (``/v1/status/<node>``): no reinstall in progress (or no endpoint
running) is a plain ``fleet pxe set NODE install`` and changes nothing (the minion makes
its own key at first start, pending on the master); a reinstall in progress means
someone else took the token, and the install fails.

``callback`` (the last late-command) posts ``/v1/done/<node>`` with the same token and,
as the body, a signature with the node's new key over ``fleet-install-done:<node>:<token>``
(the proof that the caller holds that key: a bare token is refused).

Any refusal fails the late-command loudly: the reason on stderr and the console, and an
error report to ``/v1/error/<node>``, which stops the reinstall (key revoked, boot mode
local, the claimant's address in the journal).

Both are single ``sh -c`` commands that use only POSIX sh and busybox built-ins in the
installer's environment; ``curl`` is the installer's own (Ubuntu) or the target's
(Debian: ``chroot /target curl``, as d-i has no curl), ``openssl`` the target's.
"""

from __future__ import annotations

import shlex

from fleet.inventory.model import Inventory, Node

TARGET = "/target"
TOKEN_COPY = "/tmp/fleet-install-token"  # the installer's tmpfs: between late-commands
PKI = "/etc/salt/pki/minion"


def token_name(node: Node) -> str:
    """The token's file name in ``site.pxe_state`` (next to the node's boot-mode links)."""
    return node.mac.replace(":", "-") + ".token"


def token_url(inv: Inventory, node: Node) -> str:
    from fleet.render.autoinstall import http_base  # that module imports this one

    return f"{http_base(inv)}/state/{token_name(node)}"


def endpoint(inv: Inventory) -> str:
    """The master's key/callback endpoint (``fleet reinstall``, ``site.salt.reinstall_port``)."""
    site = inv.raw.site
    return f"http://{inv.master_address}:{site.salt.reinstall_port}"


def token_path(inv: Inventory, node: Node) -> str:
    """Where ``fleet reinstall`` publishes the token on the provisioning host
    (``fleet.pxe.state.tokens_dir``: the state directory's sibling, out of TFTP's reach)."""
    return f"{inv.raw.site.pxe_state.rstrip('/')}-tokens/{token_name(node)}"


def _prelude(inv: Inventory, node: Node, curl: str) -> list[str]:
    """Shell functions both late-commands share: ``say`` (stderr and the console) and
    ``fail`` (say, report to the master's ``/v1/error/<node>``, exit 1)."""
    return [
        f"r={TARGET}", f"f={TOKEN_COPY}", f"ep={shlex.quote(endpoint(inv))}",
        f"n={shlex.quote(node.hostname)}", "t=",
        'say() { echo "fleet: $*" >&2; { echo "fleet: $*" > /dev/console; } 2>/dev/null '
        "|| true; }",
        f'fail() {{ say "$1"; {curl} -sS --max-time 30 -X POST -H "Authorization: Bearer $t" '
        "-H 'Content-Type: text/plain' --data-binary \"$1\" \"$ep/v1/error/$n\" >&2 || "
        'say "the error report to the master failed too"; exit 1; }',
    ]


def fetch_key(inv: Inventory, node: Node, curl: str) -> str:
    """The late-command that installs the rotated minion key, if a reinstall is armed."""
    d = f"$r{PKI}"
    script = "; ".join([
        *_prelude(inv, node, curl), "rm -f $f",
        f"t=$({curl} -fsS --max-time 30 {shlex.quote(token_url(inv, node))}) || t=",
        'if [ -z "$t" ]; then '
        f"c=$({curl} -s -o /dev/null -w '%{{http_code}}' --max-time 30 \"$ep/v1/status/$n\"); "
        'case "$c" in 200|000) echo "fleet: no install token (no reinstall in progress): '
        'the minion makes its own key, pending on the master"; exit 0;; esac; '
        'fail "no install token for $n, but the master has a reinstall in progress for it '
        '(status $c): the token was taken by someone else"; fi',
        "(umask 077; printf %s \"$t\" > $f)",
        f"mkdir -p {d}", f"chmod 0700 {d}",
        f"(umask 077; {curl} -sS --fail-with-body --max-time 60 "
        f"-H \"Authorization: Bearer $t\" \"$ep/v1/key/$n\" > {d}/minion.pem.new) || "
        f"{{ m=$(head -c 300 {d}/minion.pem.new 2>/dev/null); rm -f {d}/minion.pem.new; "
        'fail "the master refused the key: $m"; }',
        f"mv {d}/minion.pem.new {d}/minion.pem", f"chmod 0400 {d}/minion.pem",
        f"chroot $r openssl rsa -in {PKI}/minion.pem -pubout -out {PKI}/minion.pub",
        f"chmod 0644 {d}/minion.pub",
        # pin the master that served the key (base.minion keeps the same value)
        f"m=$({curl} -fsS --max-time 30 -H \"Authorization: Bearer $t\" "
        '"$ep/v1/finger/$n") || m=',
        "case \"$m\" in ''|*[!0-9a-f:]*) "
        'say "the master gave no key fingerprint: the minion is not pinned to it";; '
        "*) echo \"master_finger: '$m'\" > $r/etc/salt/minion.d/"
        "fleet-master-finger.conf;; esac",
        "echo \"fleet: minion key installed\"",
    ])
    return "sh -c " + shlex.quote(script)


def callback(inv: Inventory, node: Node, curl: str) -> str:
    """The last late-command: tells the master the install finished (boot mode local),
    with a signature by the node's new key as the proof."""
    sig, out = "/tmp/fleet-done.sig", "/tmp/fleet-done.out"
    script = "; ".join([
        *_prelude(inv, node, curl),
        'if [ ! -s $f ]; then echo "fleet: no reinstall in progress: no callback"; exit 0; fi',
        "t=$(cat $f)",
        "printf 'fleet-install-done:%s:%s' \"$n\" \"$t\" | chroot $r openssl dgst -sha256 "
        f"-sign {PKI}/minion.pem > {sig} || "
        'fail "could not sign the install-finished callback with the node\'s key"',
        # retried on a lost connection or answer (a repeat of a callback that was
        # taken is answered ok); a refusal (4xx) is final
        f"{curl} -sS --fail-with-body --connect-timeout 10 --max-time 60 --retry 5 "
        "--retry-delay 3 --retry-connrefused "
        f"-X POST -H \"Authorization: Bearer $t\" "
        "-H 'Content-Type: application/octet-stream' --data-binary @- "
        f"\"$ep/v1/done/$n\" < {sig} > {out} || "
        f'fail "the install-finished callback was refused: $(head -c 300 {out}); '
        'stopping here"',
        f"rm -f $f {sig} {out}",
    ])
    return "sh -c " + shlex.quote(script)
