"""base.journald: the check that journald reads the drop-in fails the highstate, before any
restart, where an `onlyif` on the service used to skip it and report success.

The check is the rendered command run with sh; `systemd-analyze` is a stand-in script in
PATH printing what `systemd-analyze cat-config systemd/journald.conf` prints (the file
with, or without, the drop-in), so a test machine's own journald does not decide the
outcome. The lab runs the state against the real systemd (tests/lab/test_highstate.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

CHECK = "base-journald-cmd-run-check"
DROPIN = "/etc/systemd/journald.conf.d/60-fleet.conf"
SHIPPED = "# /etc/systemd/journald.conf\n[Journal]\n#Storage=auto\n#SystemMaxUse=\n"


def _chunks(rendered: dict[str, Any]) -> list[dict[str, Any]]:
    node = rendered["roles"]["base"][0]
    return list(rendered["results"][(node, "ubuntu-24.04")].lowstate)


def _run(tmp: Path, command: str, prints: str) -> subprocess.CompletedProcess[str]:
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    (tmp / "out").write_text(prints)
    stub = bindir / "systemd-analyze"  # a stand-in for systemd's
    stub.write_text(f"#!/bin/sh\n[ \"$*\" = 'cat-config systemd/journald.conf' ] || exit 2\n"
                    f"cat '{tmp / 'out'}'\n")
    stub.chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "LC_ALL": "C"}
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env,
                          timeout=30, check=False, cwd=os.fspath(tmp))


def test_the_service_requires_the_check_and_nothing_skips_it(rendered: dict[str, Any]) -> None:
    chunks = {c["__id__"]: c for c in _chunks(rendered)}
    service = chunks["base-journald-service-running"]
    assert {"cmd": CHECK} in service["require"]
    assert "onlyif" not in service
    assert chunks[CHECK]["stateful"] is True


def test_no_state_of_any_role_hides_a_failure_behind_onlyif(rendered: dict[str, Any]) -> None:
    hiding = sorted({c["__id__"] for result in rendered["results"].values()
                     for c in result.lowstate if "onlyif" in c})
    assert not hiding, f"onlyif skips a state and reports success: {hiding}"


def test_a_read_drop_in_passes_without_changes(rendered: dict[str, Any], tmp_path: Path) -> None:
    chunk = next(c for c in _chunks(rendered) if c["__id__"] == CHECK)
    proc = _run(tmp_path, chunk["name"],
                SHIPPED + f"\n# {DROPIN}\n[Journal]\nStorage=persistent\nSystemMaxUse=4G\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"changed=no comment='journald reads {DROPIN}'"


def test_a_drop_in_journald_does_not_read_fails(rendered: dict[str, Any],
                                                tmp_path: Path) -> None:
    chunk = next(c for c in _chunks(rendered) if c["__id__"] == CHECK)
    proc = _run(tmp_path, chunk["name"], SHIPPED)
    assert proc.returncode == 1
    assert f"journald's configuration does not include {DROPIN}" in proc.stderr
