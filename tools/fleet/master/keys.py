"""The master's minion keys through ``salt-key``: the lists (:func:`key_lists`), a key's
deletion (:func:`delete_key`), the master's own fingerprint (:func:`master_finger`); and
a minion's identity rotated (:class:`MinionKeys`): delete the old key (``salt-key -d``),
generate a new pair (``salt-key --gen-keys``), accept the new public key in advance by
placing it in the master's ``pki_dir/minions/<id>``, keep the private key (0600) in the
node's state directory until the installer fetches it once.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fleet.master import layout
from fleet.master.runner import Runner

KEY_LISTS = {"minions": "accepted", "minions_pre": "pending", "minions_rejected": "rejected",
             "minions_denied": "denied"}


def master_finger(pki_dir: Path) -> str | None:
    """The master's public key fingerprint as minions pin it (``master_finger``: sha256
    of ``pki_dir/master.pub``'s body, as salt.crypt compares it), or None when the master
    has no key there."""
    import salt.utils.crypt  # type: ignore[import-untyped]  # heavy; only here

    pub = pki_dir / "master.pub"
    if not pub.is_file():
        return None
    return str(salt.utils.crypt.pem_finger(str(pub), sum_type="sha256"))


def listed(opts: Mapping[str, Any]) -> dict[str, list[str]]:
    """The key ids by list (minions, minions_pre, minions_rejected, minions_denied) of the
    master whose options are ``opts`` (fleet.master.runner.master_opts), read here by
    Salt's own key store (``salt.key``, what ``salt-key -L`` reads, without a salt-key
    process's start-up); :class:`~fleet.master.salt.MasterError` when it cannot be."""
    import salt.exceptions  # type: ignore[import-untyped]  # heavy; only here
    import salt.key  # type: ignore[import-untyped]

    from fleet.master.salt import MasterError

    try:
        with salt.key.get_key(opts) as key:
            got = key.list_keys()
    except (salt.exceptions.SaltException, OSError, ValueError) as exc:
        raise MasterError(f"cannot list the master's keys ({opts.get('pki_dir')}): "
                          f"{exc}") from exc
    return {k: [str(x) for x in got.get(k, [])] for k in KEY_LISTS}


def key_lists(runner: Runner, timeout: float = 60) -> dict[str, list[str]]:
    """``salt-key -L --out=json`` through ``runner`` (a flow whose runner may be a lab's
    wrapper): the key ids by list (minions, minions_pre, ...); an answer that is not one
    is a ValueError. Where the master's config is at hand, :func:`listed` reads the same
    lists without a process."""
    out = runner.run(["salt-key", "-L", "--out=json"], timeout=timeout).check().stdout
    data = json.loads(out)
    if not isinstance(data, dict):
        raise ValueError(f"salt-key -L answered {out[:200]!r}")
    return {k: [str(x) for x in v] for k, v in data.items() if isinstance(v, list)}


def delete_key(runner: Runner, key: str) -> None:
    """``salt-key -y -d KEY``."""
    runner.run(["salt-key", "-y", "-d", key], timeout=60).check()


class MinionKeys:
    def __init__(self, runner: Runner, pki_dir: Path) -> None:
        self.runner = runner
        self.pki_dir = pki_dir

    def status(self, node: str) -> list[str]:
        """Where the master holds keys for ``node``: accepted, pending, rejected, denied."""
        lists = key_lists(self.runner)
        return [label for key, label in KEY_LISTS.items() if node in lists.get(key, [])]

    def delete(self, node: str) -> None:
        delete_key(self.runner, node)
        for sub in KEY_LISTS:  # salt-key leaves a denied key in place; none may remain
            path = self.pki_dir / sub / node
            if path.exists():
                path.unlink()

    def master_finger(self) -> str | None:
        return master_finger(self.pki_dir)

    def withdraw(self, node: str) -> None:
        """Remove a key accepted in advance that no minion has used (its private half was
        never served): the files only, without salt-key's seconds of start-up."""
        for sub in KEY_LISTS:
            (self.pki_dir / sub / node).unlink(missing_ok=True)

    def generate(self, node: str, node_dir: Path) -> tuple[Path, bytes]:
        """A new key pair; returns (private key path, public key)."""
        keys = layout.keys_dir(node_dir)
        work = layout.keys_work_dir(node_dir)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(mode=0o700, parents=True)
        keys.mkdir(mode=0o700, exist_ok=True)
        self.runner.run(["salt-key", f"--gen-keys={node}", f"--gen-keys-dir={work}"]).check()
        pem, pub = work / f"{node}.pem", work / f"{node}.pub"
        if not (pem.is_file() and pub.is_file()):
            raise FileNotFoundError(f"salt-key --gen-keys wrote no {pem.name}/{pub.name} in "
                                    f"{work}")
        dest = layout.private_key(node_dir)
        pem.replace(dest)
        dest.chmod(0o600)
        public = pub.read_bytes()
        shutil.rmtree(work)
        return dest, public

    def accept_in_advance(self, node: str, public: bytes) -> Path:
        accepted = self.pki_dir / "minions" / node
        accepted.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = accepted.with_name(f".{node}.new")
        tmp.write_bytes(public)
        tmp.chmod(0o644)
        tmp.replace(accepted)
        return accepted
