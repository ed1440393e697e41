"""The full-install VM test (`make test-vm`, docs/pxe.md): runs only with FLEET_VM=1.

Under plain `pytest`, `make test` or `make test-pxe` every test here is reported as
SKIPPED with the reason (it is never reported as passed when it did not run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))
sys.path.append(str(HERE.parent / "pxe"))  # pxelab, pxebed (imported, not changed)

from vmbed import ENABLED, SKIP_REASON  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ENABLED:
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not ENABLED:
        terminalreporter.write_line(SKIP_REASON, red=True, bold=True)
