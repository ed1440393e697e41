"""The installer's side of ``fleet reinstall``'s key rotation, as two late-commands shared
by the Ubuntu autoinstall and the Debian preseed (docs/secrets.md, "Install tokens").

``fetch_key`` fetches the node's one-time token from the provisioning host
(``/state/<mac>.token``, published by ``fleet reinstall`` when it arms the install, and
served by nginx to that node's own address only), then the node's new minion key from
the master's endpoint (``GET /v1/key/<node>``, ``Authorization: Bearer <token>``), and
writes ``minion.pem`` (0400) and the matching ``minion.pub`` into the target. Without a
token (a plain ``fleet pxe set NODE install``) it changes nothing: the minion makes its
own key at first start, which the master then lists as pending.

``callback`` (the last late-command) posts ``/v1/done/<node>`` with the same token, which
sets the node's boot mode back to ``local``; without a token it does nothing.

Both are single ``sh -c`` commands that use only POSIX sh and busybox built-ins in the
installer's environment; ``curl`` is the installer's own (Ubuntu) or the target's
(Debian: ``chroot /target curl``, as d-i has no curl).
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


def fetch_key(inv: Inventory, node: Node, curl: str) -> str:
    """The late-command that installs the rotated minion key, if a reinstall is armed."""
    d = f"$r{PKI}"
    script = "; ".join([
        f"r={TARGET}", f"f={TOKEN_COPY}", "rm -f $f",
        f"t=$({curl} -fsS --max-time 30 {token_url(inv, node)}) || t=",
        'if [ -z "$t" ]; then echo "fleet: no install token (no reinstall in progress): '
        'the minion makes its own key, pending on the master"; exit 0; fi',
        "(umask 077; printf %s \"$t\" > $f)",
        f"mkdir -p {d}", f"chmod 0700 {d}",
        f"(umask 077; {curl} -fsS --max-time 60 -H \"Authorization: Bearer $t\" "
        f"{endpoint(inv)}/v1/key/{node.hostname} > {d}/minion.pem.new) || "
        "{ echo \"fleet: the master refused the key (see its reinstall journal)\"; "
        f"rm -f {d}/minion.pem.new; exit 1; }}",
        f"mv {d}/minion.pem.new {d}/minion.pem", f"chmod 0400 {d}/minion.pem",
        f"chroot $r openssl rsa -in {PKI}/minion.pem -pubout -out {PKI}/minion.pub",
        f"chmod 0644 {d}/minion.pub",
        "echo \"fleet: minion key installed\"",
    ])
    return "sh -c " + shlex.quote(script)


def callback(inv: Inventory, node: Node, curl: str) -> str:
    """The last late-command: tells the master the install finished (boot mode local)."""
    script = "; ".join([
        f"f={TOKEN_COPY}",
        'if [ ! -s $f ]; then echo "fleet: no reinstall in progress: no callback"; exit 0; fi',
        f"{curl} -fsS --max-time 60 -X POST -H \"Authorization: Bearer $(cat $f)\" "
        f"{endpoint(inv)}/v1/done/{node.hostname} || "
        "{ echo \"fleet: the install-finished callback failed: the node is still armed "
        "for install; stopping here\"; exit 1; }",
        "rm -f $f",
    ])
    return "sh -c " + shlex.quote(script)
