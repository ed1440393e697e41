"""The state directory of ``fleet reinstall``, defined once: one directory per node under
the state root, and every file the flow, the installer endpoint and the key handling keep
there.

    <state_root>/<node>/
        journal.jsonl          the node's journal (journal.py)
        lock                   held while a flow runs for the node (lock.py)
        token.json, token.lock the one-time install token's record (tokens.py)
        install-token          the token in clear (0600) until the installer is given it
        keys/minion.pem        the node's new private key, until the installer fetches it
        keys/minion.pub        its public half: the install-finished callback is signed
        keys.new/              salt-key --gen-keys' scratch directory
"""

from __future__ import annotations

from pathlib import Path


def node_dir(state_root: Path, node: str) -> Path:
    return state_root / node


def journal(node_dir: Path) -> Path:
    return node_dir / "journal.jsonl"


def lock(node_dir: Path) -> Path:
    return node_dir / "lock"


def token_record(node_dir: Path) -> Path:
    return node_dir / "token.json"


def token_lock(node_dir: Path) -> Path:
    return node_dir / "token.lock"


def token_file(node_dir: Path) -> Path:
    return node_dir / "install-token"


def keys_dir(node_dir: Path) -> Path:
    return node_dir / "keys"


def keys_work_dir(node_dir: Path) -> Path:
    return node_dir / "keys.new"


def private_key(node_dir: Path) -> Path:
    return keys_dir(node_dir) / "minion.pem"


def public_key(node_dir: Path) -> Path:
    return keys_dir(node_dir) / "minion.pub"
