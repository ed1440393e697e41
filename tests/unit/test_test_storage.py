"""make test's own podman storage (tools/test-storage.sh) and the lab's podman calls that
must all look there: an image imported into the machine's storage while the others look
in the run's was found missing by a fresh-clone `make test` (the minion image's import ran
with an environment of its own)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from fleet.lab import image
from fleet.lab.paths import Paths

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "test-storage.sh"


def test_fresh_writes_a_storage_of_its_own_and_clean_removes_it(tmp_path: Path) -> None:
    where = tmp_path / "podman"
    (where / "storage").mkdir(parents=True)
    (where / "storage" / "left-by-an-earlier-run").write_text("x")
    out = subprocess.run(["bash", str(SCRIPT), "fresh", str(where)], check=True,
                         capture_output=True, text=True).stdout
    assert "(empty)" in out
    assert not (where / "storage" / "left-by-an-earlier-run").exists()
    conf = (where / "storage.conf").read_text()
    assert f'graphroot = "{where}/storage"' in conf and f'runroot = "{where}/run"' in conf
    subprocess.run(["bash", str(SCRIPT), "clean", str(where)], check=True)
    assert not where.exists()


def test_a_relative_directory_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(["bash", str(SCRIPT), "fresh", "relative"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "not absolute" in proc.stderr
    assert not (tmp_path / "relative").exists()


def test_the_image_import_looks_where_the_other_podman_calls_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(tmp_path / "storage.conf"))
    seen: dict[str, Any] = {}

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
        if argv[:2] == ["podman", "import"]:
            seen.update(kw["env"])
        return subprocess.CompletedProcess(argv, 0, b"", b"")

    monkeypatch.setattr(image.subprocess, "run", fake_run)
    monkeypatch.setattr(image, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, b"",
                                                                                  b""))
    monkeypatch.setattr(image, "prune", lambda paths, keep: None)
    root = tmp_path / "rootfs"
    root.mkdir()
    image.import_root(Paths(tmp_path), root, "localhost/x:1")
    assert seen["CONTAINERS_STORAGE_CONF"] == str(tmp_path / "storage.conf")
    assert "CONTAINERS_CONF" in seen
