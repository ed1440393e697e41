"""What the ``fleet status`` command-line tests share: the small inventory's site as the
sources see it. Salt's real key store (``salt.key``, what ``salt-key -L`` reads) on a
throw-away master pki dir (tests/support/saltkeys.py); STAND-INS for the ``salt`` CLI
(test.ping), ``salt-run`` (manage.alived: the answering minions are the connected ones)
and for Slurm's ``scontrol`` reached through --slurm-command (scripts that print what the
real ones print, from a table the test writes; no Salt master or slurmctld runs here); a
real HTTP server as Prometheus; the PXE state links as fleet.pxe.state leaves them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from health.fakesite import scontrol_line
from support.cli import ROOT, SMALL
from support.saltkeys import salt_key_bin, salt_master_config
from support.saltstandin import calls, write_salt
from support.venvbin import venv_bin

ALL = ["head-01", "gpu-01", "gpu-02", "gpu-03", "gpu-04", "stor-1", "stor-2"]
GPUS = ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]


@dataclass
class Site:
    tmp: Path
    conf: Path
    pki: Path
    answering: list[str] = field(default_factory=lambda: list(ALL))
    slurm: dict[str, tuple[str, str]] = field(
        default_factory=lambda: dict.fromkeys(GPUS, ("IDLE", "")))
    salt_broken: bool = False
    slurm_broken: bool = False
    alerts: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.bin = venv_bin(self.tmp / "standin-venv")  # the salt STAND-IN beside python
        for d in ("pxe-state", "apply", "health", "reinstall", "rollout"):
            (self.tmp / d).mkdir()
        for n in ALL:
            self.key(n, "minions")

    def key(self, node: str, where: str) -> None:
        """A key file where Salt's key store lists it (the directory names)."""
        for d in ("minions", "minions_pre", "minions_rejected", "minions_denied"):
            (self.pki / d / node).unlink(missing_ok=True)
        (self.pki / where / node).write_text("-----BEGIN PUBLIC KEY-----\nx\n")

    def write_standins(self) -> None:
        state = self.tmp / "standin.json"
        state.write_text(json.dumps({
            "answering": self.answering, "salt_broken": self.salt_broken,
            "slurm_broken": self.slurm_broken,
            "scontrol": "\n".join(scontrol_line(n, s, reason=r)
                                  for n, (s, r) in self.slurm.items())}))
        write_salt(self.bin, self.tmp, "test.ping",  # STAND-IN for the salt CLI
                   dict.fromkeys(self.answering, True), broken=self.salt_broken)
        run = self.bin / "salt-run"  # STAND-IN for salt-run manage.alived: the connected
        run.write_text(f"""#!{sys.executable}
import json, sys
st = json.load(open({str(state)!r}))
with open({str(self.tmp / "calls.log")!r}, "a") as f:
    f.write(json.dumps(["salt-run", *sys.argv[1:]]) + "\\n")
if st["salt_broken"]:
    sys.stderr.write("Salt request timed out. The master is not responding.\\n")
    sys.exit(2)
assert sys.argv[-2:] == ["manage.alived", "--out=json"], sys.argv
print(json.dumps(sorted(st["answering"])))
""")
        run.chmod(0o755)
        slurm = self.bin / "slurm-standin"  # STAND-IN for a Slurm client: scontrol
        slurm.write_text(f"""#!{sys.executable}
import json, sys
st = json.load(open({str(state)!r}))
with open({str(self.tmp / "calls.log")!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if st["slurm_broken"]:
    sys.stderr.write("slurm_load_node: Unable to contact slurm controller\\n")
    sys.exit(1)
assert sys.argv[1:] == ["scontrol", "show", "node", "-o"], sys.argv
print(st["scontrol"])
""")
        slurm.chmod(0o755)

    def calls(self) -> list[str]:
        """The stand-ins' calls (salt's and the Slurm client's), each as one line."""
        return [" ".join(c) for c in calls(self.tmp)]

    def argv(self, *args: str, prometheus: str | None = None, inventory: Path = SMALL,
             power: list[str] | None = None, live: bool = True, json_out: bool = True
             ) -> tuple[list[str], dict[str, str]]:
        """``fleet status ARGS`` and its environment; ``power``: the BMC options (else
        --no-power); ``live``: every source asked now (else the collector's cache under
        tmp/status)."""
        self.write_standins()
        argv = [str(self.bin / "python"), "-m", "fleet", "status", "-i", str(inventory),
                *(["--json"] if json_out else []),
                *(power if power is not None else ["--no-power"]),
                "--salt-config", str(self.conf),
                "--slurm-command", str(self.bin / "slurm-standin"),
                "--pxe-state", str(self.tmp / "pxe-state"),
                "--apply-state-dir", str(self.tmp / "apply"),
                "--health-state-dir", str(self.tmp / "health"),
                "--reinstall-state-dir", str(self.tmp / "reinstall"),
                "--rollout-state-dir", str(self.tmp / "rollout"), "--salt-timeout", "5",
                *(["--prometheus", prometheus] if prometheus else ["--no-alerts"]),
                "--status-state-dir", str(self.tmp / "status"), *(["--live"] if live else []),
                *args]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"),
               "PATH": f"{self.bin}:{Path(salt_key_bin()).parent}:{os.environ['PATH']}"}
        return argv, env

    def run(self, *args: str, prometheus: str | None = None, timeout: float = 120,
            inventory: Path = SMALL, power: list[str] | None = None, live: bool = True
            ) -> tuple[int, dict[str, Any], str]:
        """``fleet status ARGS --json`` (:meth:`argv`), its exit code, document, stderr."""
        argv, env = self.argv(*args, prometheus=prometheus, inventory=inventory,
                              power=power, live=live)
        proc = subprocess.run(argv, cwd=self.tmp, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        assert proc.stdout, proc.stderr
        return proc.returncode, json.loads(proc.stdout), proc.stderr


def make_site(tmp: Path) -> Site:
    conf, pki = salt_master_config(tmp)
    return Site(tmp, conf, pki)


def nodes(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in doc["nodes"]}


class Prometheus:
    """A real HTTP server answering /api/v1/alerts as Prometheus does, with ``alerts``."""

    def __init__(self, alerts: list[dict[str, Any]]) -> None:
        body = json.dumps({"status": "success", "data": {"alerts": alerts}}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the name http.server calls
                code = 200 if self.path == "/api/v1/alerts" else 404
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body if code == 200 else b"{}")

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def firing(alertname: str, node: str, summary: str) -> dict[str, Any]:
    return {"labels": {"alertname": alertname, "node": node, "severity": "critical"},
            "annotations": {"summary": summary}, "state": "firing",
            "activeAt": "2026-12-01T10:00:00Z", "value": "1"}
