"""The input contract of the fleet page: the fields of a ``fleet status --json`` document
(fleet.status.view.document) that the page reads, in this one place.

The document: ``{"nodes": [RECORD, ...], ...}`` (``nodes`` may also be a mapping from
hostname to RECORD; an optional ``generated`` time). A RECORD has ``node`` (the hostname),
``status`` (``ok`` | ``problem`` | ``unknown``), ``problems`` (a list of strings, or of
objects with a ``text``/``message``/``problem``), ``state`` (the lifecycle state) and one
field per source (:data:`FIELDS`: as `fleet status` writes them, e.g. ``power``
``{"state", "error"}``, ``minion`` ``"answers"``/``"silent"``, ``slurm``
``{"state", "reason"}``). Every field may be missing; a node with no record is
``unknown`` (``planned`` if the inventory says so: `fleet status` leaves planned nodes
out by default); a record of a node the inventory does not have is listed as such, never
drawn in a rack; anything else in a record is shown as it is (as text). All values are
untrusted text from the nodes.
"""

from __future__ import annotations

NODES = "nodes"
NODE = "node"
STATUS = "status"
PROBLEMS = "problems"
PROBLEM_TEXT = ("text", "message", "problem")  # a problem given as an object
LIFECYCLE = "state"  # planned | burn-in | active | maintenance (retired: in no rack)
# the node's stage from discovery to service (fleet.status.stage): {"stage", "summary",
# "text", ...}; "stage" one of planned | discovered | burn-in | failed | maintenance | active
STAGE = "stage"
# the document's reports kept (fleet.status.stage.Discovered): {"matched": {host: REPORT},
# "unmatched": [REPORT], "unreadable": {mac: why}}, REPORT {"mac", "serial", "product",
# "port", "by", "problems"}
DISCOVERED = "discovered"
# "answers" / "silent", "connected" / "not connected" (the collector), a bool, or
# {"answering": bool}
MINION = "minion"
GENERATED = ("generated", "generated_at", "time")  # when the status was collected
# in a field's object: a Unix time (shown as UTC and its age), and the age `fleet status`
# adds beside it (not shown again); empty values ("summary": "") are left out
TIMES = frozenset({"ts"})
AGE = "ago"
# the document's site-wide lines, shown above the racks: alerts of no node
# ([{"name", "severity", "summary"}]), the sources that could not be asked
# ({"slurm": {"error": "..."}}), how old each collected one's answer is
# ({"power": {"age_s": 40.2}}) and notes (["..."])
SITE_ALERTS = "site_alerts"
SOURCES = "sources"
AGE_S = "age_s"
NOTES = "notes"

STATUSES = ("ok", "problem", "unknown")
MINION_DOWN = frozenset({"silent", "down", "no", "false", "not answering", "no answer", "no-answer",
                         "no-return", "timeout", "lost", "no-key", "not connected"})

# (field, label) of each source, in the order the details list them
FIELDS: tuple[tuple[str, str], ...] = (
    (LIFECYCLE, "lifecycle"),
    (STAGE, "stage (discovery to service)"),
    ("power", "power"),
    ("boot", "boot mode"),
    ("key", "minion key"),
    (MINION, "minion"),
    ("hardware", "hardware against the inventory (fleet status --hardware)"),
    ("bmc_hardware", "hardware from the BMC (Redfish) against the inventory"),
    ("slurm", "Slurm"),
    ("apply", "last apply"),
    ("health", "last health"),
    ("work", "reinstall / rollout at work"),
    ("alerts", "firing alerts"),
    ("unknown", "sources without an answer"),
)

# the page's states, in precedence order (a node is drawn in the first that holds), with
# the legend's label: the CSS class is "state-<name>" (static/page.css)
STATES: tuple[tuple[str, str], ...] = (
    ("planned", "planned (not installed yet)"),
    ("discovered", "discovered (its report waits: fleet discover accept)"),
    ("failed", "failed burn-in (maintenance)"),
    ("maintenance", "maintenance (inventory)"),
    ("minion-down", "minion not answering"),
    ("problem", "problem"),
    ("unknown", "unknown / no status"),
    ("burn-in", "burn-in (not in service yet)"),
    ("ok", "ok"),
)
