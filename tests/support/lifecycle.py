"""What adding or retiring a node may change in the render besides the node's own files:
the site-wide files that list every node (tests/render/test_lifecycle.py counts them on
the site's inventory, tests/lab/test_runbook.py checks `fleet diff` on the lab)."""

from __future__ import annotations

# the files that list every node
SITE_LISTS = frozenset({
    "pillar/hosts.sls", "pillar/slurm.sls", "pillar/top.sls", "pillar/mkv.sls",
    "pillar/monitoring.sls", "pxe/dnsmasq/dns-hosts", "pxe/nginx/tokens.conf"})


def site_lists(files: set[str]) -> set[str]:
    """The site-wide lists among ``files``: SITE_LISTS and the pictures (they draw every
    node: racks, switch ports, fabrics; nothing a minion reads)."""
    return {p for p in files if p in SITE_LISTS or p.startswith("pictures/")}
