"""fleet.monitoring.alerts against a stand-in Prometheus: a real HTTP server on loopback
(StandInPrometheus) serving /api/v1/alerts bodies of Prometheus's shape. Prometheus
itself is not run here (the lab tests query the real one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from fleet.inventory.model import Inventory
from fleet.monitoring import alerts


class StandInPrometheus(ThreadingHTTPServer):
    """Answers GET /api/v1/alerts with ``body`` (status ``code``); counts the requests."""

    body: bytes = b""
    code: int = 200
    headers_out: dict[str, str]
    paths: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: StandInPrometheus

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self.send_response(self.server.code)
        for k, v in self.server.headers_out.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def prom() -> Iterator[StandInPrometheus]:
    server = StandInPrometheus(("127.0.0.1", 0), _Handler)
    server.paths = []
    server.headers_out = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _url(server: StandInPrometheus) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def _alert(name: str, node: str | None, state: str = "firing", **labels: str) -> dict[str, Any]:
    lab = {"alertname": name, "severity": "critical", **labels}
    if node is not None:
        lab["node"] = node
    return {"labels": lab, "annotations": {"summary": f"{node}: {name}"}, "state": state,
            "activeAt": "2026-12-02T01:00:00Z", "value": "1e+00"}


def _answer(*items: dict[str, Any]) -> bytes:
    return json.dumps({"status": "success", "data": {"alerts": list(items)}}).encode()


def test_firing_alerts_by_node(prom: StandInPrometheus) -> None:
    prom.body = _answer(_alert("NodeDown", "tbox-002"),
                        _alert("GpuMissing", "tbox-001", gpus_expected="8"),
                        _alert("IbPortDown", "tbox-001", device="mlx5_0", port="1"),
                        _alert("NodeDown", "stor-003", state="pending"),
                        _alert("Watchdog", None))
    got = alerts.fetch(_url(prom))
    assert prom.paths == ["/api/v1/alerts"]
    grouped = alerts.by_node(got)
    assert list(grouped) == [alerts.SITE_WIDE, "tbox-001", "tbox-002"]
    assert [a.name for a in grouped["tbox-001"]] == ["GpuMissing", "IbPortDown"]
    assert grouped["tbox-001"][0].summary == "tbox-001: GpuMissing"
    assert grouped["tbox-001"][0].labels["gpus_expected"] == "8"
    assert "stor-003" not in grouped  # pending is not firing
    assert [a.node for a in alerts.by_node(got, ("pending",))["stor-003"]] == ["stor-003"]


def test_control_characters_never_reach_the_terminal(prom: StandInPrometheus) -> None:
    prom.body = _answer(_alert("NodeDown", "tbox-001\x1b[2J", job="x\x07"))
    (alert,) = alerts.fetch(_url(prom))
    assert alert.node == "tbox-001?[2J" and alert.labels["job"] == "x?"


@pytest.mark.parametrize("body, words", [
    (b"<html>proxy</html>", "not JSON"),
    (json.dumps({"status": "error", "error": "bad"}).encode(), "status is not success: bad"),
    (json.dumps({"status": "success", "data": {}}).encode(), "data.alerts is not a list"),
    (json.dumps({"status": "success", "data": {"alerts": [{"labels": {"a": 1},
                                                           "state": "firing"}]}}).encode(),
     "data.alerts[0].labels.a is not a string"),
    (json.dumps({"status": "success", "data": {"alerts": [{"labels": {},
                                                           "state": "burning"}]}}).encode(),
     "state is 'burning'"),
])
def test_an_answer_not_of_prometheus_shape_is_an_error(prom: StandInPrometheus, body: bytes,
                                                       words: str) -> None:
    prom.body = body
    with pytest.raises(alerts.AlertsError) as info:
        alerts.fetch(_url(prom))
    assert words in str(info.value) and "/api/v1/alerts" in str(info.value)


def test_http_errors_and_redirects_are_errors(prom: StandInPrometheus) -> None:
    prom.code, prom.body = 503, b"{}"
    with pytest.raises(alerts.AlertsError, match="HTTP 503"):
        alerts.fetch(_url(prom))
    prom.code, prom.headers_out = 302, {"Location": "http://10.9.9.9/elsewhere"}
    with pytest.raises(alerts.AlertsError, match="HTTP 302"):
        alerts.fetch(_url(prom))


def test_nobody_listening_names_the_monitoring_host(prom: StandInPrometheus) -> None:
    url = _url(prom)
    prom.shutdown()
    prom.server_close()
    with pytest.raises(alerts.AlertsError, match=r"site\.monitoring\.host"):
        alerts.fetch(url, timeout=5)


def test_an_oversized_answer_is_refused(prom: StandInPrometheus,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alerts, "MAX_BYTES", 100)
    prom.body = _answer(*[_alert("NodeDown", f"tbox-{i:03d}") for i in range(5)])
    with pytest.raises(alerts.AlertsError, match="longer than 100 bytes"):
        alerts.fetch(_url(prom))


def test_prometheus_url_is_the_monitoring_hosts_management_address(site_inv: Inventory) -> None:
    head = site_inv.nodes[site_inv.raw.site.provisioning_host]
    assert alerts.prometheus_url(site_inv) == f"http://{head.address}:9090"
