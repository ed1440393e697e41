"""The incremental render (``.render.inputs`` beside the output): after any sequence of
edits its output is byte for byte a full render's, and a store that is missing, stale or
hostile gives a full render."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet import cli
from fleet.inventory.load import load_inventory, parse
from fleet.render import (
    context_files,
    fact_files,
    incremental,
    node_files,
    prefetch,
    render_all,
    tree,
)
from render.helpers import SMALL, read_tree

SITE = Path(__file__).resolve().parents[2] / "inventory.yaml"

HOSTS = ("head-01", "gpu-01", "gpu-02", "gpu-03")


def _entry(text: str, host: str) -> re.Match[str]:
    m = re.search(rf"^  {re.escape(host)}: \{{[^}}]*\}}", text, re.M | re.S)
    assert m is not None, host
    return m


def edit(text: str, kind: str, host: str, n: int) -> str:
    """One edit: a node's own fact (serial, MAC, BMC MAC, IB GUID: all of
    :data:`incremental.LOCAL`) or the site's domain."""
    if kind == "domain":
        return re.sub(r"^  domain: \S+", f"  domain: lab{n}.test", text, count=1, flags=re.M)
    m = _entry(text, host)
    field, value = {"serial": ("serial", f"S{n:06d}"),
                    "mac": ("mac", f'"52:54:00:ab:{n // 256:02x}:{n % 256:02x}"'),
                    "bmc_mac": ("bmc_mac", f'"52:54:00:cd:{n // 256:02x}:{n % 256:02x}"'),
                    "ib_guid": ("ib_guid", f'"0x1070fd03ff{n:06x}"')}[kind]
    entry = re.sub(rf"\b{field}: [^,}}]+", f"{field}: {value}", m.group(0), count=1)
    return text[:m.start()] + entry + text[m.end():]


def every_own_fact_changed(text: str) -> str:
    """``text`` with every node's own facts (all of :data:`incremental.LOCAL`) new and
    still unique."""
    n = iter(range(1, 1 << 24))

    def mac(m: re.Match[str]) -> str:
        i = next(n)
        return f'{m.group(1)}: "02:99:{i >> 16 & 255:02x}:{i >> 8 & 255:02x}:{i & 255:02x}:01"'

    new, macs = re.subn(r'\b(mac|bmc_mac): "[0-9a-f:]{17}"', mac, text)
    new, serials = re.subn(r"\bserial: [A-Z0-9]+", lambda _m: f"serial: Z{next(n):08d}", new)
    new, guids = re.subn(r'\bib_guid: "0x[0-9a-f]{16}"',
                         lambda _m: f'ib_guid: "0x99{next(n):014x}"', new)
    assert macs and serials and guids  # each kind of fact changed (LOCAL: all of them)
    return new


@pytest.mark.parametrize("where", [SMALL, SITE], ids=["small", "site"])
def test_the_site_context_files_read_no_node_own_fact(where: Path) -> None:
    """What lets a one-node edit keep the site's context files (pictures, the pillar's
    lists) unrendered: they are the same whatever every node's own facts are. The site's
    fact files and the nodes' own files are not (so the edit is seen at all)."""
    text = where.read_text(encoding="utf-8")
    before = parse(text, "before.yaml", [])
    after = parse(every_own_fact_changed(text), "after.yaml", [])
    assert context_files(after) == context_files(before)
    assert fact_files(after) != fact_files(before)
    nodes = list(before.nodes)
    assert node_files(after, [after.nodes[h] for h in nodes]) != node_files(
        before, [before.nodes[h] for h in nodes])


def output(root: Path) -> dict[str, bytes]:
    """The rendered files under ``root`` (not the store beside them)."""
    return {rel: data for rel, data in read_tree(root)[0].items()
            if rel != incremental.STORE}


def render(inv_file: Path, out: Path) -> None:
    assert cli.main(["render", "-q", "-i", str(inv_file), "-o", str(out)]) == 0


def full(inv_file: Path, where: Path) -> dict[str, bytes]:
    where.mkdir()
    tree.write(where, render_all(load_inventory(inv_file)))
    return output(where)


EDITS = st.lists(st.tuples(st.sampled_from([*incremental.LOCAL, "domain"]),
                           st.sampled_from(HOSTS)), min_size=1, max_size=4)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_incremental_equals_full_after_random_edits(
        tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, str]]) -> None:
    work = tmp_path_factory.mktemp("inc")
    out, inv_file = work / "out", work / "inventory.yaml"
    out.mkdir()
    text = SMALL.read_text(encoding="utf-8")
    inv_file.write_text(text, encoding="utf-8")
    render(inv_file, out)
    for n, (kind, host) in enumerate(edits, start=1):
        text = edit(text, kind, host, n)
        inv_file.write_text(text, encoding="utf-8")
        render(inv_file, out)
        assert output(out) == full(inv_file, work / f"full-{n}")
    assert incremental.load(out) is not None


def test_one_node_edit_renders_only_that_node(rendered_once: tuple[Path, Path]) -> None:
    out, inv_file = rendered_once
    inv_file.write_text(edit(inv_file.read_text(encoding="utf-8"), "mac", "gpu-02", 7),
                        encoding="utf-8")
    plan = incremental.plan(out, load_inventory(inv_file))
    assert plan.nodes == ["gpu-02"], plan.why
    assert "pictures/racks.svg" in plan.site and "pillar/site.sls" in plan.site  # kept
    assert "pxe/nginx/tokens.conf" not in plan.site  # rendered: it reads the node's MAC
    render(inv_file, out)
    assert output(out) == full(inv_file, out.parent / "full")


def hostile_stores(out: Path) -> dict[str, str]:
    doc = json.loads((out / incremental.STORE).read_text())
    host, (key, files, ids) = next(iter(doc["nodes"].items()))
    other = next(h for h in doc["nodes"] if h != host)
    context, site, site_ids = doc["site"]

    def variant(change: dict[str, object]) -> str:
        return json.dumps({**doc, **change})

    def node(entry: list[object]) -> str:
        return variant({"nodes": {**doc["nodes"], host: entry}})

    return {
        "not json": "{nope",
        "another version": variant({"version": 99}),
        "a path outside": node([key, [*files, "pxe/../../x"], ids]),
        "a path ending in ..": node([key, [*files, f"pxe/{host}/.."], ids]),
        "another node's file": node([key, doc["nodes"][other][1], ids]),
        "a file left out": node([key, files[:-1], ids]),
        "a bad hash": variant({"context": "x" * 64}),
        "another identity": node([key, files, "0" * 64]),
        "a list": "[]",
        "a site file left out": variant({"site": [context, site[1:], site_ids]}),
        "a node's file as the site's": variant({"site": [context, [*site, files[0]], site_ids]}),
        "a site path outside": variant({"site": [context, [*site, "pictures/.."], site_ids]}),
        "the site of another context": variant({"site": ["0" * 64, site, site_ids]}),
        "no site": json.dumps({k: v for k, v in doc.items() if k != "site"}),
    }


@pytest.mark.parametrize("case", ["not json", "another version", "a path outside",
                                  "a path ending in ..", "another node's file",
                                  "a file left out", "a bad hash", "another identity", "a list",
                                  "a site file left out", "a node's file as the site's",
                                  "a site path outside", "the site of another context",
                                  "no site"])
def test_hostile_store_gives_a_full_render(rendered_once: tuple[Path, Path], case: str) -> None:
    out, inv_file = rendered_once
    (out / "pillar" / "site.sls").write_text("tampered\n")  # a full render repairs it
    for rel in ("pxe/dnsmasq/hosts/gpu-01", "pillar/nodes/gpu-01.sls"):
        (out / rel).unlink()  # a kept file gone: only a full render puts it back
    (out / incremental.STORE).write_text(hostile_stores(out)[case])
    render(inv_file, out)
    assert output(out) == full(inv_file, out.parent / "full")


def test_a_kept_file_changed_by_hand_gives_a_full_render(
        rendered_once: tuple[Path, Path]) -> None:
    out, inv_file = rendered_once
    (out / "pillar" / "nodes" / "gpu-03.sls").write_text("edited by hand\n")
    plan = incremental.plan(out, load_inventory(inv_file))
    assert plan.nodes is None and "gpu-03's files changed since" in plan.why
    render(inv_file, out)
    assert output(out) == full(inv_file, out.parent / "full")


def test_the_prefetched_identities_are_judged_like_the_plans_own(
        rendered_once: tuple[Path, Path]) -> None:
    """`fleet render` reads the store's files (Prefetch) while it validates: a kept file
    edited by hand, or gone, still gives a full render, as when the plan reads them."""
    out, inv_file = rendered_once
    inv = load_inventory(inv_file)
    unchanged = incremental.plan(out, inv, prefetch.Prefetch(out).result())
    assert unchanged.nodes == [] and unchanged.why == incremental.plan(out, inv).why
    (out / "pillar" / "nodes" / "gpu-03.sls").write_text("edited by hand\n")
    plan = incremental.plan(out, inv, prefetch.Prefetch(out).result())
    assert plan.nodes is None and "gpu-03's files changed since" in plan.why
    (out / "pillar" / "nodes" / "gpu-03.sls").unlink()
    plan = incremental.plan(out, inv, prefetch.Prefetch(out).result())
    assert plan.nodes is None and "gpu-03.sls is gone" in plan.why
    # a prefetch of another output directory is not used
    elsewhere = out.parent / "elsewhere"
    elsewhere.mkdir()
    assert incremental.plan(out, inv, prefetch.Prefetch(elsewhere).result()).why == plan.why
    render(inv_file, out)
    assert output(out) == full(inv_file, out.parent / "full")


def test_a_kept_site_file_changed_by_hand_gives_a_full_render(
        rendered_once: tuple[Path, Path]) -> None:
    out, inv_file = rendered_once
    inv_file.write_text(edit(inv_file.read_text(encoding="utf-8"), "serial", "gpu-01", 3),
                        encoding="utf-8")
    (out / "pictures" / "racks.svg").write_text("edited by hand\n")
    plan = incremental.plan(out, load_inventory(inv_file))
    assert plan.nodes is None and "the site's files changed since" in plan.why
    render(inv_file, out)
    assert output(out) == full(inv_file, out.parent / "full")


def test_missing_store_gives_a_full_render_and_check_ignores_the_store(
        rendered_once: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    out, inv_file = rendered_once
    (out / "pillar" / "nodes" / "gpu-03.sls").write_text("edited by hand\n")
    # --check is exact whatever the store says
    assert cli.main(["render", "--check", "-q", "-i", str(inv_file), "-o", str(out)]) == 3
    (out / incremental.STORE).unlink()
    assert incremental.plan(out, load_inventory(inv_file)).nodes is None
    render(inv_file, out)
    assert cli.main(["render", "--check", "-q", "-i", str(inv_file), "-o", str(out)]) == 0
    capsys.readouterr()
