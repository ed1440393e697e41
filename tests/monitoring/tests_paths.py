"""Paths of the repository the monitoring tests read."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "inventory.yaml"
