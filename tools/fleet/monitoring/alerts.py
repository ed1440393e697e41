"""Firing alerts per node, from Prometheus's ``/api/v1/alerts`` on the monitoring host.

For a later ``fleet status``: :func:`fetch` returns every alert Prometheus has (pending
and firing), :func:`by_node` groups them by their ``node`` label (the label every fleet
target carries). The answer is checked, not trusted: it must be Prometheus's JSON shape,
at most ``MAX_BYTES``, and label text reaches a terminal without control characters.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from fleet.inventory.model import Inventory
from fleet.master.text import masked

MAX_BYTES = 16 * 1024 * 1024
SITE_WIDE = ""  # by_node's key of alerts without a node label


class AlertsError(Exception):
    """Prometheus could not be asked, or its answer is not its alerts API's."""


@dataclass(frozen=True)
class Alert:
    name: str
    state: str  # "firing" or "pending"
    node: str
    severity: str
    summary: str
    active_at: str
    labels: dict[str, str] = field(default_factory=dict)


def prometheus_url(inv: Inventory) -> str:
    """Prometheus on the monitoring host, at its management address."""
    from fleet.render import monitoring

    server = inv.nodes[monitoring.host(inv)]
    return f"http://{monitoring.address(server)}:{monitoring.PORTS['prometheus']}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a redirect is an answer we do not follow (the 3xx is an error)


def fetch(base_url: str, timeout: float = 10.0) -> list[Alert]:
    url = base_url.rstrip("/") + "/api/v1/alerts"
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=timeout) as resp:
            body = resp.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise AlertsError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AlertsError(f"{url}: {reason}; is Prometheus running on the monitoring host "
                          "(site.monitoring.host)?") from None
    if len(body) > MAX_BYTES:
        raise AlertsError(f"{url}: answer longer than {MAX_BYTES} bytes")
    return parse(body, url)


def _text(value: Any, what: str, url: str) -> str:
    if not isinstance(value, str):
        raise AlertsError(f"{url}: {what} is not a string: {value!r:.80}")
    return masked(value, 1000)


def parse(body: bytes, url: str = "the answer") -> list[Alert]:
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AlertsError(f"{url}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        raise AlertsError(f"{url}: status is not success"
                          + (f": {_text(error, 'error', url)}" if error else ""))
    data = doc.get("data")
    alerts = data.get("alerts") if isinstance(data, dict) else None
    if not isinstance(alerts, list):
        raise AlertsError(f"{url}: data.alerts is not a list")
    out = []
    for i, raw in enumerate(alerts):
        where = f"data.alerts[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("labels"), dict):
            raise AlertsError(f"{url}: {where} has no labels")
        labels = {_text(k, f"{where} label name", url): _text(v, f"{where}.labels.{k}", url)
                  for k, v in raw["labels"].items()}
        annotations = raw.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise AlertsError(f"{url}: {where}.annotations is not a mapping")
        state = _text(raw.get("state"), f"{where}.state", url)
        if state not in ("firing", "pending", "inactive"):
            raise AlertsError(f"{url}: {where}.state is {state!r}")
        out.append(Alert(
            name=labels.get("alertname", "?"), state=state, node=labels.get("node", SITE_WIDE),
            severity=labels.get("severity", ""),
            summary=_text(annotations.get("summary", ""), f"{where}.annotations.summary", url),
            active_at=_text(raw.get("activeAt", ""), f"{where}.activeAt", url),
            labels=labels))
    return out


def by_node(alerts: list[Alert], states: tuple[str, ...] = ("firing",)) -> dict[str, list[Alert]]:
    """Alerts in ``states`` by node (SITE_WIDE: those without a node label), each node's
    sorted by name; nodes in name order."""
    out: dict[str, list[Alert]] = {}
    for alert in alerts:
        if alert.state in states:
            out.setdefault(alert.node, []).append(alert)
    return {node: sorted(out[node], key=lambda a: (a.name, sorted(a.labels.items())))
            for node in sorted(out)}
