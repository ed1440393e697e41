"""Salt's own repository in the fill: the installer installs salt-minion from it (not from
the OS archive), so the site repository keeps that version too, resolved from Salt's
signed index with the keyring base.apt gives every node."""

from __future__ import annotations

import os
import re

from fleet.apt.facts import deb822

# what the installer's late-commands install from it (autoinstall, preseed)
INSTALLS = ("salt-minion",)


def enabled(text: str | None) -> str | None:
    """The rendered Salt source (``fleet.render.bootstrap.SOURCES``'s text) if the node's
    apt uses it (the lab's minions come from a wheelhouse: their source is written
    switched off), else None."""
    if text is None:
        return None
    on = [st for st in deb822(text) if st.get("Enabled", "yes").lower() != "no"]
    return text if on else None


def upstream(uri: str) -> str:
    """``--archive``: Salt's repository itself, not through the apt cache
    (apt-cacher-ng's ``http://cache:3142/HTTPS///host/path`` is ``https://host/path``);
    FLEET_SALT_MIRROR overrides."""
    override = os.environ.get("FLEET_SALT_MIRROR")
    if override:
        return override
    m = re.match(r"^https?://[^/]+/HTTPS///(.+)$", uri)
    return f"https://{m.group(1)}" if m else uri
