"""site.monitoring: strict types, a known host, and its fixed ports checked like the rest."""

from __future__ import annotations

import pytest
from tests_paths import SITE

from fleet.inventory.load import parse
from fleet.problems import InventoryError


def _problems(text: str) -> list[str]:
    with pytest.raises(InventoryError) as info:
        parse(text, "inventory.yaml")
    return [p.render() if hasattr(p, "render") else str(p) for p in info.value.problems]


def _with(block: str) -> str:
    text = SITE.read_text()
    anchor = "  pxe_root: /srv/fleet/pxe\n"
    assert anchor in text
    return text.replace(anchor, anchor + block)


def test_an_unknown_monitoring_host_names_the_field() -> None:
    (problem,) = _problems(_with("  monitoring: {host: mon-99}\n"))
    assert "site.monitoring.host" in problem and "mon-99" in problem


def test_thresholds_are_strict() -> None:
    problems = _problems(_with("  monitoring: {thresholds: {filesystem_used_percent: '90'}}\n"))
    assert any("site.monitoring.thresholds.filesystem_used_percent" in p for p in problems)
    problems = _problems(_with("  monitoring: {thresholds: {filesystem_used_percent: 100}}\n"))
    assert any("filesystem_used_percent" in p for p in problems)


def test_an_mkv_volume_port_on_the_exporters_port_is_rejected() -> None:
    text = SITE.read_text().replace("port: 3000, volume_port: 3001",
                                    "port: 3000, volume_port: 9100")
    problems = _problems(text)
    assert any("port 9100" in p and "prometheus-node-exporter" in p for p in problems), problems


def test_alert_holds_are_strict() -> None:
    problems = _problems(_with("  monitoring: {thresholds: {for_s: {GpuMissing: -1}}}\n"))
    assert any("site.monitoring.thresholds.for_s.GpuMissing" in p for p in problems)
    problems = _problems(_with("  monitoring: {thresholds: {for_s: {GpuMising: 10}}}\n"))
    assert any("GpuMising" in p for p in problems)
