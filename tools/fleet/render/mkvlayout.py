"""Where an mkv volume's data disks are mounted: one definition for the pillar (the mounts
the mkv role makes), the alert rules and the health checks."""

from __future__ import annotations

MKV_ROOT = "/srv/mkv"


def subvolume(i: int) -> str:
    """mkv's subvolume directory name: ``sv%02X`` (upper-case hex: sv0A after sv09)."""
    return f"sv{i:02X}"


def data_mount(i: int) -> str:
    """Where an mkv volume's i-th data disk is mounted."""
    return f"{MKV_ROOT}/{subvolume(i)}"
