"""`fleet pxe set|status` on the lab's head node, against what its nginx serves.

The head node (provisioning role) runs fleet from /opt/fleet (tools/fleet/lab/headtools.py;
`fleet-lab` adds the lab's inventory and overlay). A switch must change what another node
fetches as its boot script at once, for that node only, with no render and no reload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from labtools import Lab, node_ids, podman_exec

HEAD = node_ids("provisioning")[0]
GPU = node_ids("nvidia")


def fleet_pxe(lab: Lab, *args: str) -> str:
    out = podman_exec(lab, HEAD, "fleet-lab", "pxe", *args)
    assert out.returncode == 0, f"fleet pxe {' '.join(args)}: {out.stderr}"
    return out.stdout


def modes(lab: Lab) -> dict[str, str]:
    data = json.loads(fleet_pxe(lab, "status", "--json"))
    return {e["node"]: e["mode"] for e in data["nodes"]}


def served(lab: Lab, client: str, node: str) -> str:
    """The iPXE script ``client`` gets from the head node's nginx for ``node``'s MAC."""
    mac = lab.plan.node(node).mac.replace(":", "-")
    url = f"http://{lab.plan.node(HEAD).address}/state/{mac}.ipxe"
    out = podman_exec(lab, client, "curl", "-sS", "-f", url)
    assert out.returncode == 0, f"{client}: GET {url}: {out.stderr}"
    return out.stdout


def rendered(lab: Lab, node: str, name: str) -> str:
    return (lab.paths.render / "pxe" / "http" / "hosts" / node / name).read_text()


@pytest.fixture
def armed(lab: Lab) -> Iterator[str]:
    node = GPU[0]
    yield node
    fleet_pxe(lab, "set", node, "local")


def test_status_lists_every_lab_node(lab: Lab) -> None:
    assert set(modes(lab)) == {n.hostname for n in lab.nodes}


def test_set_switches_only_that_node(lab: Lab, armed: str) -> None:
    others = [n for n in GPU if n != armed]
    fleet_pxe(lab, "set", armed, "local")
    before = modes(lab)
    fleet_pxe(lab, "set", armed, "install")
    after = modes(lab)
    assert after[armed] == "install"
    assert {n: m for n, m in after.items() if n != armed} == \
        {n: m for n, m in before.items() if n != armed}
    # another node fetches the armed node's install script from nginx at once ...
    assert served(lab, others[0], armed) == rendered(lab, armed, "install.ipxe")
    # ... and back to the local disk after the switch back
    fleet_pxe(lab, "set", armed, "local")
    assert modes(lab)[armed] == "local"
    assert served(lab, others[0], armed) == rendered(lab, armed, "local.ipxe")


def test_unknown_node_is_refused(lab: Lab) -> None:
    out = podman_exec(lab, HEAD, "fleet-lab", "pxe", "set", "no-such-node", "install")
    assert out.returncode == 2 and "no-such-node" in out.stderr
