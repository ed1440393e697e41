"""The configs a swarm runs with, rendered by the real roles from a real pillar.

The master's ``master.d/fleet.conf`` is the file ``provisioning.master`` renders for the
provisioning node (Salt's own state compiler and template renderer, through
tools/fleet/saltrender.py, with that node's pillar and Ubuntu 24.04 grains). Only its
paths are moved: the site's checkout (``/srv/fleet/checkout``) becomes this checkout's
``salt/``, the given pillar directory, and a dummy secrets root. Each minion's
``minion.d/fleet.conf`` is the one ``base.minion`` manages for that minion's id (its
pillar's ``node:salt``, the installer's bytes).

Also a ``swarm`` file-server environment holding one cheap state (``swarm-cheap``: a
file in the minion's own cache dir), so that a real ``state.apply`` runs on every minion
without touching this host's system configuration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]

from support import harness  # noqa: E402  (tests/salt: imports Salt only when a renderer is made)

MASTER_STATE = "provisioning-master-file-managed-conf"
MINION_STATE = "base-minion-file-managed-conf"

CHEAP_SLS = """\
# fleet swarm: one cheap state, applied for real on every minion
swarm-cheap-file-managed:
  file.managed:
    - name: {{ opts['cachedir'] }}/swarm-cheap
    - contents: {{ opts['id'] | json }}
    - mode: '0644'
"""


@dataclass(frozen=True)
class SiteConfigs:
    master_conf: str                    # master.d/fleet.conf for the swarm
    rendered_master_conf: str           # as provisioning.master renders it for the site
    minion_conf: Callable[[str], str]   # minion.d/fleet.conf for an id
    ids: list[str]                      # every minion id of the pillar, in pillar order
    provisioning_node: str


def render(tmp: Path, pillar_root: Path = ROOT / "pillar",
           salt_root: Path = ROOT / "salt") -> SiteConfigs:
    from fleet import saltrender

    saltrender.quiet_salt_logging()
    secrets = tmp / "secrets-pillar"
    harness.write_secrets_root(secrets)
    renderer = saltrender.Renderer(salt_root, pillar_root, secrets, tmp / "render-cache")
    ids = renderer.nodes()
    head = next(n for n in ids if "provisioning" in renderer.pillar(n)["node"]["roles"])
    res = renderer.render(head)
    if res.errors:
        raise RuntimeError(f"rendering {head}'s highstate failed: {res.errors[:3]}")
    rendered = res.files[MASTER_STATE]
    chunk = _chunk(res.lowstate, MASTER_STATE)
    checkout = str(chunk["context"]["checkout"])
    secrets_rel = str(chunk["context"]["secrets_root"])
    conf = yaml.safe_load(rendered)
    moved = {f"{checkout}/salt": str(salt_root),
             f"{checkout}/pillar": str(pillar_root),
             f"{checkout}/{secrets_rel}": str(secrets)}
    for key in ("file_roots", "pillar_roots"):
        conf[key]["base"] = [moved.get(p, p) for p in conf[key]["base"]]
        left = [p for p in conf[key]["base"] if p.startswith(checkout)]
        if left:
            raise RuntimeError(f"{key}: {left} not moved to this checkout")
    cheap = tmp / "swarm-env"
    cheap.mkdir(parents=True, exist_ok=True)
    (cheap / "swarm-cheap.sls").write_text(CHEAP_SLS)
    conf["file_roots"]["swarm"] = [str(cheap)]
    master_conf = ("# provisioning.master's rendering for " + head + ", paths moved to this "
                   "checkout; plus file_roots env `swarm`\n"
                   + yaml.safe_dump(conf, sort_keys=False))
    mchunk = _chunk(res.lowstate, MINION_STATE)

    def minion_conf(mid: str) -> str:
        """The file base.minion manages for ``mid``: its pillar's ``node:salt`` config
        (fleet.render.bootstrap, as the installer writes it)."""
        return str(renderer.pillar(mid)["node"]["salt"]["minion_conf"]["contents"])

    if minion_conf(head) != mchunk["contents"]:
        raise RuntimeError("base.minion manages another minion config than the pillar's: "
                           "the swarm would not run the base role's minion config")

    return SiteConfigs(master_conf=master_conf, rendered_master_conf=rendered,
                       minion_conf=minion_conf, ids=ids, provisioning_node=head)


def spread(ids: list[str], n: int) -> list[str]:
    """n ids spread over the inventory (every role represented), in inventory order."""
    if n >= len(ids):
        return list(ids)
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


def render_ids(pillar_root: Path = ROOT / "pillar") -> list[str]:
    """Every minion id of the pillar top, in order (no Salt needed)."""
    top = yaml.safe_load((pillar_root / "top.sls").read_text())
    return list(top["base"])


def _chunk(lowstate: list[dict[str, Any]], state_id: str) -> dict[str, Any]:
    for c in lowstate:
        if c.get("__id__") == state_id:
            return c
    raise RuntimeError(f"state {state_id} not in the lowstate")
