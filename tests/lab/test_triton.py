"""Triton in the lab: compute.triton from the pinned nvidia-pytriton wheel (lab/overlay.yaml
turns it on for one node only, the tbox2 group's), the real tritonserver binary run by its
systemd unit. The lab has no GPU or NVIDIA driver, so the server runs CPU-only (it logs
that CUDA, NVML and DCGM are missing) and serves the python backend: a python model that
a task user writes into the model repository is loaded through the HTTP API (explicit
model control), answers an inference, and is counted in the metrics that Prometheus on
head-01 scrapes. HTTP and gRPC listen on 127.0.0.1 only.

Run alone: `FLEET_LAB=1 .venv/bin/pytest tests/lab/test_triton.py -v` (ubuntu-24.04 lab;
the Debian 12 lab has no compute layer, and these tests skip there saying so).
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import urllib.parse
import urllib.request
from typing import Any

import pytest
from labtools import ROOT, Lab, poll, sh

from fleet.inventory import compute
from fleet.lab.paths import Paths
from fleet.lab.plan import load as load_plan

UNIT = "compute-tritonserver.service"
MODEL = "fleet_lab_add_one"
# a python-backend model as miniray's tasks write them: model.py in <repository>/<name>/1/
MODEL_PY = """\
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() + 1)])
            for r in requests]
"""
CONFIG = {"name": MODEL, "backend": "python", "max_batch_size": 0,
          "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [4]}],
          "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [4]}],
          "instance_group": [{"kind": "KIND_CPU", "count": 1}]}
# an HTTP request on the node itself (the API is on its 127.0.0.1 only): METHOD URL [BODY]
HTTP = r"""
import sys, urllib.request, urllib.error
method, url, *body = sys.argv[1:]
req = urllib.request.Request(url, body[0].encode() if body else None, method=method,
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
"""


def _triton_nodes() -> list[str]:
    inv = load_plan(Paths(ROOT)).inventory
    return [h for h, n in inv.nodes.items() if compute.runs_triton(inv.raw, n)]


@pytest.fixture(scope="module")
def node() -> str:
    nodes = _triton_nodes()
    if not nodes:
        pytest.skip("NO TRITON NODE in this lab: the lab inventory gives no node role "
                    "compute.triton (the Debian 12 lab has no compute layer)")
    assert len(nodes) == 1, f"the lab runs Triton on one node only, not {nodes}"
    return nodes[0]


def _api(lab: Lab, node: str, method: str, path: str, body: Any = None) -> tuple[int, str]:
    port = lab.pillar("compute")["compute"]["triton"]["ports"]["http"]
    args = [method, f"http://127.0.0.1:{port}{path}"]
    if body is not None:
        args.append(json.dumps(body))
    r = sh(lab.host(node), "python3 -c " + shlex.quote(HTTP) + " "
           + " ".join(shlex.quote(a) for a in args), timeout=90)
    assert r.rc == 0, r.stderr
    status, _, text = r.stdout.strip().partition(" ")
    return int(status), text


def _address(lab: Lab, node: str) -> str:
    return str(lab.pillar(f"nodes/{node}")["node"]["monitoring"]["address"])


def test_the_service_runs_with_explicit_model_control(node: str, lab: Lab) -> None:
    h = lab.host(node)
    assert h.service(UNIT).is_enabled
    assert sh(h, f"systemctl is-active {UNIT}").stdout.strip() == "active"
    assert _api(lab, node, "GET", "/v2/health/live")[0] == 200
    log = sh(h, f"journalctl -u {UNIT} --no-pager -o cat").stdout
    assert "MODE_EXPLICIT" in log and "server_version" in log, log[-2000:]


def test_http_and_grpc_answer_on_loopback_only(node: str, lab: Lab) -> None:
    ports = lab.pillar("compute")["compute"]["triton"]["ports"]
    address = _address(lab, node)
    out = sh(lab.host(node), "ss -Hltn").stdout
    for what, want in (("http", "127.0.0.1"), ("grpc", "127.0.0.1"), ("metrics", address)):
        # gRPC's socket is IPv6 with the v4-mapped address: [::ffff:127.0.0.1]:8001
        local = [re.sub(r"^\[::ffff:([0-9.]+)\]", r"\1", line.split()[3])
                 for line in out.splitlines() if line.split()[3].endswith(f":{ports[what]}")]
        assert local == [f"{want}:{ports[what]}"], (what, local)
    for what in ("http", "grpc"):  # from this host, on the lab network
        with socket.socket() as s, pytest.raises(ConnectionRefusedError):
            s.settimeout(20)
            s.connect((address, ports[what]))


def _metrics(lab: Lab, node: str) -> str:
    port = lab.pillar("compute")["compute"]["triton"]["ports"]["metrics"]
    with urllib.request.urlopen(f"http://{_address(lab, node)}:{port}/metrics",
                                timeout=10) as r:
        return str(r.read().decode())


def test_a_python_model_loads_answers_and_is_counted(node: str, lab: Lab) -> None:
    h = lab.host(node)
    repo = f"/dev/shm/model-repository/{MODEL}"
    # a task slot's user writes the model, as miniray's tasks do (the repository is 1777)
    write = (f"install -d {repo}/1 && printf %s {shlex.quote(MODEL_PY)} > {repo}/1/model.py")
    r = sh(h, f"runuser -u proc000 -- sh -c {shlex.quote(write)}")
    assert r.rc == 0, r.stderr
    try:
        status, text = _api(lab, node, "POST", f"/v2/repository/models/{MODEL}/load",
                            {"parameters": {"config": json.dumps(CONFIG)}})
        assert status == 200, (text, sh(h, f"journalctl -u {UNIT} --no-pager -n 30").stdout)
        assert _api(lab, node, "GET", f"/v2/models/{MODEL}/ready")[0] == 200
        status, text = _api(lab, node, "POST", f"/v2/models/{MODEL}/infer", {"inputs": [
            {"name": "INPUT0", "shape": [4], "datatype": "INT32", "data": [0, 1, 2, 3]}]})
        assert status == 200, text
        assert json.loads(text)["outputs"][0]["data"] == [1, 2, 3, 4]
        # read from this host at the node's management address, where Prometheus reads it
        line = f'nv_inference_count{{model="{MODEL}",version="1"}} 1'
        poll("the inference counted in /metrics",
             lambda: line in _metrics(lab, node).splitlines(), timeout=20)
    finally:
        _api(lab, node, "POST", f"/v2/repository/models/{MODEL}/unload")
        sh(h, f"rm -rf {repo}")
    assert _api(lab, node, "GET", f"/v2/models/{MODEL}/ready")[0] != 200


def _triton_targets(lab: Lab) -> dict[str, str]:
    """node -> health of its job="triton" target in Prometheus on the monitoring host."""
    site = lab.pillar("site")["site"]["monitoring"]
    url = (f"http://{site['address']}:{site['ports']['prometheus']}/api/v1/targets?"
           + urllib.parse.urlencode({"state": "active"}))
    with urllib.request.urlopen(url, timeout=10) as resp:
        doc = json.loads(resp.read())
    return {t["labels"]["node"]: t["health"] for t in doc["data"]["activeTargets"]
            if t["labels"].get("job") == "triton"}


def test_prometheus_scrapes_triton(node: str, lab: Lab) -> None:
    poll("Prometheus's triton target up on the Triton node only",
         lambda: _triton_targets(lab) == {node: "up"} or None, timeout=60, interval=2)
