"""The full-install VM test (`make test-vm`, docs/pxe.md): runs only with FLEET_VM=1.

Under plain `pytest`, `make test` or `make test-pxe` every test here is reported as
SKIPPED with the reason (it is never reported as passed when it did not run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import beds
from vm.vmbed import ENABLED, SKIP_REASON

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    beds.skip_unless(ENABLED, SKIP_REASON, HERE, items)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not ENABLED:
        terminalreporter.write_line(SKIP_REASON, red=True, bold=True)
