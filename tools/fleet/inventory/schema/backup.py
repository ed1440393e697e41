"""``site.backup``: where ``fleet backup`` keeps the master's backup (restic), and how long."""


from typing import Literal

from pydantic import Field, StrictInt, model_validator

from fleet.inventory.schema.base import Model, Name
from fleet.inventory.types import DeployDir, Server, Url


class Destination(Model):
    """One model for the three types (not a union: a problem's path stays the YAML's)."""

    type: Literal["path", "sftp", "rest"]
    """path: a directory on the master (a disk or a mount that is not its system disk);
    sftp: a directory on a storage server of the inventory, neither master, over ssh with
    the secrets store's backup key (the backup.target state makes the login there);
    rest: a restic rest-server (not packaged by Debian 12 or Ubuntu 24.04)"""
    path: DeployDir | None = None
    """path, sftp: absolute directory of the restic repository"""
    host: Server | None = None
    """sftp: the storage server (a node of the inventory, not site.salt.master or its
    standby)"""
    user: Name | None = None
    """sftp: the login made for the master on the storage server (sftp only)"""
    url: Url | None = None
    """rest: the rest-server URL (https in production); its credentials are the operator's
    environment's, never written here"""

    @model_validator(mode="after")
    def _fields_of_type(self) -> "Destination":
        need = {"path": ("path",), "sftp": ("host", "user", "path"), "rest": ("url",)}
        missing = [f for f in need[self.type] if getattr(self, f) is None]
        extra = [f for f in ("path", "host", "user", "url")
                 if f not in need[self.type] and getattr(self, f) is not None]
        if missing or extra:
            raise ValueError(f"a {self.type} destination has "
                             f"{', '.join(need[self.type])}"
                             + (f"; missing: {', '.join(missing)}" if missing else "")
                             + (f"; not for {self.type}: {', '.join(extra)}" if extra else ""))
        return self


class BackupSpec(Model):
    destination: Destination
    """where the restic repository is"""
    keep_daily: StrictInt = Field(default=14, ge=1, le=3650)
    """daily snapshots kept by `fleet backup` (restic forget --keep-daily)"""
    keep_weekly: StrictInt = Field(default=8, ge=0, le=520)
    """weekly snapshots kept besides (restic forget --keep-weekly)"""


def repository(dest: Destination) -> str:
    """The restic repository string of a destination."""
    if dest.type == "sftp":
        return f"sftp:{dest.user}@{dest.host}:{dest.path}"
    if dest.type == "rest":
        return f"rest:{dest.url}"
    return str(dest.path)
