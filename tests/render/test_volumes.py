"""A change that drops a volume of an mkv array (fleet.render.volumes): refused by
`fleet render` against the committed render unless the array acknowledges it; `fleet
diff` says it; each message names the array, the volumes, what happens to the data and
the `fleet mkv` run that follows."""

from __future__ import annotations

from pathlib import Path

from fleet.render.volumes import Removal
from support.cli import SMALL, run_fleet

ONE_REPLICA = "mkv:\n  arrays:\n    data: {replicas: 1}\n"
RETIRE = "nodes:\n  stor-2: {state: retired}\n"
ACK = "mkv:\n  arrays:\n    data: {volumes_removed: [stor-2]}\n"


def _overlays(tmp: Path, *texts: str) -> list[str]:
    args = []
    for i, text in enumerate(texts):
        path = tmp / f"overlay{i}.yaml"
        path.write_text(text)
        args += ["--overlay", str(path)]
    return args


def test_retiring_a_volume_of_a_one_replica_array_is_refused_until_acknowledged(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_fleet("render", "-q", "-i", str(SMALL), *_overlays(tmp_path, ONE_REPLICA),
                  "-o", str(out))
    assert r.returncode == 0, r.stderr
    before = (out / "pillar" / "mkv.sls").read_text()
    assert "stor-2:3001" in before

    retire = _overlays(tmp_path, ONE_REPLICA, RETIRE)
    r = run_fleet("render", "-q", "-i", str(SMALL), *retire, "-o", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert (f"{SMALL}: mkv.arrays.data.volumes_removed: mkv array data: volume(s) stor-2 "
            "leave the array; replicas 1: the keys stored on them become unreachable") \
        in r.stderr
    assert "`fleet mkv rebuild data`" in r.stderr and "nothing was written" in r.stderr
    assert (out / "pillar" / "mkv.sls").read_text() == before
    assert (out / "pillar" / "nodes" / "stor-2.sls").exists()

    r = run_fleet("diff", "-i", str(SMALL), *retire, "-o", str(out))
    assert r.returncode == 3
    assert "mkv array data: volume(s) stor-2 leave the array" in r.stderr
    assert "`fleet render` refuses it until mkv.arrays.data.volumes_removed lists them" \
        in r.stderr

    acked = _overlays(tmp_path, ONE_REPLICA, RETIRE, ACK)
    r = run_fleet("render", "-q", "-i", str(SMALL), *acked, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "note: mkv array data: volume(s) stor-2 leave the array" in r.stderr
    assert "`fleet mkv rebuild data`" in r.stderr
    assert "stor-2" not in (out / "pillar" / "mkv.sls").read_text()
    assert not (out / "pillar" / "nodes" / "stor-2.sls").exists()
    # the acknowledgement is inert once the render no longer lists the volume
    r = run_fleet("render", "-q", "-i", str(SMALL), *acked, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "note:" not in r.stderr


def test_moving_a_volume_names_its_new_array_and_a_many_replica_array_rebalances() -> None:
    r = Removal("training", ("stor-010",), 3, {"stor-010": "cache"}, False)
    text = r.text()
    assert "mkv array training: volume(s) stor-010 leave the array" in text
    assert "stor-010 is now a volume of cache" in text
    assert "replicas 3: their keys keep fewer copies until rebalanced" in text
    assert "`fleet mkv rebuild training`, then `fleet mkv rebalance training`" in text
    assert r.field == "mkv.arrays.training.volumes_removed"
