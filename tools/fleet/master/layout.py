"""The state directory of ``fleet reinstall``, defined once: one directory per node under
the state root, and every file the flow, the installer endpoint and the key handling keep
there.

    <state_root>/<node>/
        journal.jsonl          the node's journal (journal.py)
        lock                   held while a flow runs for the node (lock.py)
        console.lock           held while `fleet console` is attached to it (ops/console.py)
        token.json, token.lock the one-time install token's record (tokens.py)
        install-token          the token in clear (0600) until the installer is given it
        keys/minion.pem        the node's new private key, until the installer fetches it
        keys/minion.pub        its public half: the install-finished callback is signed
        keys.new/              salt-key --gen-keys' scratch directory
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def node_dir(state_root: Path, node: str) -> Path:
    return state_root / node


def _in_node_dir(*parts: str) -> Callable[[Path], Path]:
    """``f(node_dir)``: the path ``parts`` below a node's directory."""
    def path(node_dir: Path) -> Path:
        return node_dir.joinpath(*parts)
    path.__doc__ = f"<node_dir>/{'/'.join(parts)}"
    return path


journal = _in_node_dir("journal.jsonl")
lock = _in_node_dir("lock")
console_lock = _in_node_dir("console.lock")
token_record = _in_node_dir("token.json")
token_lock = _in_node_dir("token.lock")
token_file = _in_node_dir("install-token")
keys_dir = _in_node_dir("keys")
keys_work_dir = _in_node_dir("keys.new")
private_key = _in_node_dir("keys", "minion.pem")
public_key = _in_node_dir("keys", "minion.pub")
