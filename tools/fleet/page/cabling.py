"""The cabling facts on the fleet page: each node's verdict and its NICs' findings from a
``fleet cabling --json`` document (fleet.cabling.report.document), as a field of its
details and, when a NIC is not where the inventory says, a problem that colours it.

Tolerant as view.py: the document may be missing or of any shape; a node it does not
name has no cabling field. Every value is untrusted text, shown through view.text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LABEL = "cabling (LLDP)"


@dataclass
class Cabling:
    verdict: str  # ok | problems | unknown (or whatever the document says, as text)
    problems: list[str] = field(default_factory=list)
    text: str = ""


def _where(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value.get('switch')} port {value.get('port')}"
    return "-"


def per_node(doc: Any, text: Any) -> dict[str, Cabling]:
    """``text``: view.text (one line, clipped). Per node the document names."""
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        return {}
    out: dict[str, Cabling] = {}
    for host, rec in doc["nodes"].items():
        if isinstance(host, str) and isinstance(rec, dict):
            verdict = text(rec.get("verdict"))
            why = f" ({text(rec['error'])})" if rec.get("error") else ""
            out[host] = Cabling(verdict, [], verdict + why)
    findings = doc.get("findings")
    for f in findings if isinstance(findings, list) else []:
        if not isinstance(f, dict) or f.get("node") not in out or f.get("status") == "ok":
            continue
        line = (f"{text(f.get('interface'))} {text(f.get('status')).replace('_', ' ')}: "
                f"expected {text(_where(f.get('expected')))}, found "
                f"{text(_where(f.get('found')))}")
        c = out[f["node"]]
        if f.get("status") != "not_observed":
            c.problems.append(f"cabling: {line}")
        c.text += f"; {line}"
    return out
