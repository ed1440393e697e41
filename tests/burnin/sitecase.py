"""`fleet burnin run` of the site's tbox-039, put in burn-in with a profile's burn-in block
of the test's, against a Salt config that does not exist: what the run keeps for checks
that fail before any node is asked."""

from __future__ import annotations

from pathlib import Path

from discover.sites import SITE as TEXT
from discover.sites import entry_line, with_burnin
from fleet.burnin import results
from fleet.burnin.results import Result
from fleet.cli import main

NODE = "tbox-039"


def run_without_salt(tmp_path: Path, burnin: str | None, *extra: str
                     ) -> tuple[int, dict[str, Result]]:
    """The run's exit code and the results it kept for NODE; ``burnin`` is the profile's
    ``burnin:`` block, its lines indented under it (``"      gpu-stress: {seconds: 60}\\n"``;
    None: the site's own); ``extra``: more arguments of the run."""
    text = TEXT if burnin is None else with_burnin(burnin)
    line = entry_line(text, NODE)
    inv = tmp_path / "inventory.yaml"
    inv.write_text(text.replace(line, line.replace(": {", ": {state: burn-in, ", 1)))
    res = tmp_path / "results"
    code = main(["burnin", "run", NODE, "-i", str(inv), "--results", str(res),
                 "--salt-config", "/nonexistent", *extra])
    return code, results.load(res, NODE)
