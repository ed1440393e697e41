"""mkv: the volume servers (nginx) on every storage node, and the master units."""

from __future__ import annotations

import json
import shlex
import uuid

import pytest
from labtools import Lab, node_ids, poll, sh

VOLUMES = node_ids("mkv.volume")
MASTERS = node_ids("mkv.master")
CLIENT = MASTERS[0] if MASTERS else node_ids()[0]


def node_mkv(lab: Lab, node: str) -> dict:  # type: ignore[type-arg]
    return lab.pillar(f"nodes/{node}")["node"]["mkv"]


def curl(lab: Lab, args: str, timeout: int = 30) -> tuple[int, str]:
    """curl from another lab node (the way the mkv master reaches a volume)."""
    r = sh(lab.host(CLIENT), f"curl -sS -o /tmp/curl.out -w '%{{http_code}}' {args}"
           f" && cat /tmp/curl.out", timeout=timeout)
    assert r.rc == 0, r.stderr
    return int(r.stdout[:3]), r.stdout[3:]


@pytest.mark.parametrize("node", VOLUMES)
def test_svnn_layout(lab: Lab, node: str) -> None:
    host = lab.host(node)
    disks = lab.pillar(f"nodes/{node}")["node"]["disks"]["data"]
    m = node_mkv(lab, node)
    assert len(disks) == m["subvolumes"]
    for i, disk in enumerate(disks):
        assert disk["name"] == f"sv{i:02d}"
        d = host.file(disk["mount"])
        assert d.is_directory and d.user == "www-data", disk["mount"]
        assert host.file(f"{disk['mount']}/.body_temp").mode == 0o700


@pytest.mark.parametrize("node", VOLUMES)
def test_volume_unit(lab: Lab, node: str) -> None:
    host = lab.host(node)
    assert host.service("mkv-volume").is_running
    assert host.service("mkv-volume").is_enabled
    # the distribution's nginx stays off on a pure volume server
    assert not host.service("nginx").is_running


@pytest.mark.parametrize("node", VOLUMES)
def test_volume_put_get_list_delete(lab: Lab, node: str) -> None:
    m = node_mkv(lab, node)
    base = f"http://{node}:{m['port']}"
    poll(f"{base} answering", lambda: curl(lab, f"{base}/sv00/")[0] == 200, timeout=60)
    body = f"fleet-lab {uuid.uuid4()}"
    key = f"/sv03/ab/cd/{uuid.uuid4().hex}"
    code, _ = curl(lab, f"-X PUT --data-binary {shlex.quote(body)} {base}{key}")
    assert code == 201
    # on the subvolume's own directory, owned by the nginx user
    on_disk = lab.host(node).file(f"{m['root']}{key}")
    assert on_disk.content_string == body
    code, got = curl(lab, f"{base}{key}")
    assert (code, got) == (200, body)
    code, listing = curl(lab, f"{base}/sv03/ab/cd/")
    assert code == 200
    entries = json.loads(listing)
    assert {"name": key.rsplit("/", 1)[1], "type": "file"}.items() <= next(
        e for e in entries if e["name"] == key.rsplit("/", 1)[1]).items()
    # the temporary directories never show in a listing (rebuild must not see them)
    code, top = curl(lab, f"{base}/")
    assert code == 200
    names = {e["name"] for e in json.loads(top)}
    assert not any(n.startswith(".") for n in names)
    assert {f"sv{i:02d}" for i in range(m["subvolumes"])} <= names
    code, _ = curl(lab, f"-X DELETE {base}{key}")
    assert code == 204
    code, _ = curl(lab, f"{base}{key}")
    assert code == 404


def expected_exec(lab: Lab, name: str) -> str:
    a = lab.pillar("mkv")["mkv"]["arrays"][name]
    return (f"/usr/local/bin/mkv -port {a['port']} -volumes {','.join(a['volumes'])} "
            f"-replicas {a['replicas']} -subvolumes {a['subvolumes']} "
            f"-db {a['index_path']} server")


def arrays_of(lab: Lab, master: str) -> list[str]:
    return sorted(n for n, a in lab.pillar("mkv")["mkv"]["arrays"].items()
                  if a["master"] == master)


@pytest.mark.parametrize("master", MASTERS)
def test_master_unit_flags(lab: Lab, master: str) -> None:
    host = lab.host(master)
    names = arrays_of(lab, master)
    assert names, f"{master} is master of no array in the lab"
    for name in names:
        unit = host.file(f"/etc/systemd/system/mkv-{name}.service").content_string
        execs = [line.split("=", 1)[1] for line in unit.splitlines()
                 if line.startswith("ExecStart=")]
        assert execs == [expected_exec(lab, name)]
        assert host.service(f"mkv-{name}").is_enabled
        assert host.service(f"mkv-{name}").is_running
        user = [line for line in unit.splitlines() if line.startswith("User=")]
        assert user == ["User=mkv"]


@pytest.mark.parametrize("master", MASTERS)
def test_master_put_get_delete(lab: Lab, master: str) -> None:
    if lab.mkv_kind != "binary":
        pytest.skip("NO MKV BINARY: MKV_BINARY was not set when the lab came up, so the "
                    "mkv masters run a stub; set MKV_BINARY=/path/to/mkv and rerun "
                    "`make lab && make test-lab` to test PUT/GET/DELETE through a master")
    for name in arrays_of(lab, master):
        port = lab.pillar("mkv")["mkv"]["arrays"][name]["port"]
        base = f"http://{master}:{port}"
        poll(f"mkv master {base}", lambda b=base: curl(lab, f"{b}/nokey")[0] == 404,
             timeout=60)
        key = f"/fleet-lab-{uuid.uuid4().hex}"
        code, _ = curl(lab, f"-L -X PUT --data-binary hello {base}{key}")
        assert code == 201
        code, got = curl(lab, f"-L {base}{key}")
        assert (code, got) == (200, "hello")
        code, _ = curl(lab, f"-X DELETE {base}{key}")
        assert code == 204
        code, _ = curl(lab, f"-L {base}{key}")
        assert code == 404
