"""The health gate (reinstall step 8) on the small inventory, with a fake Salt/Slurm
runner. The shell commands the checks send through `salt cmd.run` really run here (sh):
the IB port read against a fake /sys/class/infiniband tree, the curl against local HTTP
servers standing in for the mkv volume's nginx and the mkv master."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master.keys import MinionKeys
from fleet.master.runner import Result
from fleet.reinstall import health
from fleet.reinstall.context import Context, Options, StepFailedError
from fleet.reinstall.steps import health as health_step
from reinstall.helpers import ROOT, RecordingBootMode

SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
GPU, STOR = "gpu-01", "stor-1"  # gpu-01: nvidia, infiniband, slurm.compute; stor-1: mkv
NVIDIA_SMI = "\n".join(f"GPU {i}: NVIDIA GeForce RTX 4090 (UUID: GPU-{i})" for i in range(8))
SCONTROL_OK = ("NodeName=gpu-01 Arch=x86_64 CoresPerSocket=32\n   Gres=gpu:rtx4090:8(S:0-1)\n"
               "   State=IDLE+DRAIN ThreadsPerCore=2\n")


@pytest.fixture(scope="module")
def inventory() -> Inventory:
    return load_inventory(SMALL)


@dataclass
class FakeSite:
    """Answers salt, scontrol as the master would. ``salt ... cmd.run CMD`` runs CMD with
    sh after the ``rewrite`` replacements (sysfs root, host:port -> 127.0.0.1:port), unless
    ``cmd_out`` has a canned answer for a command containing that key."""

    tmp: Path
    hardware: object = True
    rewrite: dict[str, str] = field(default_factory=dict)
    cmd_out: dict[str, object] = field(default_factory=dict)
    scontrol: Result | None = None
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        self.calls.append(a)
        if a[0] == "salt":
            assert a[-2:] == ("--out=json", "--static")
            target, func = a[1], a[2]
            if func == "pillar.get":
                assert a[3:5] == ("fleet:hardware", "True")
                value = self.hardware
            else:
                assert func == "cmd.run"
                value = self._cmd_run(a[3])
            return Result(a, 0, json.dumps({target: value}), "")
        if a[:3] == ("scontrol", "show", "node"):
            return self.scontrol or Result(a, 0, SCONTROL_OK, "")
        if a[:2] == ("scontrol", "update"):
            return Result(a, 0, "", "")
        raise AssertionError(f"unexpected command {a}")

    def _cmd_run(self, cmd: str) -> object:
        for key, out in self.cmd_out.items():
            if key in cmd:
                return out
        if cmd == "nvidia-smi -L":
            return NVIDIA_SMI
        for old, new in self.rewrite.items():
            cmd = cmd.replace(old, new)
        proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60,
                              check=False)
        return (proc.stdout + proc.stderr).rstrip("\n")  # cmd.run: stderr into the output

    def salt_cmds(self) -> list[tuple[str, str]]:
        return [(c[1], c[3]) for c in self.calls if c[0] == "salt" and c[2] == "cmd.run"]

    def drains(self) -> list[str]:
        return [c[-1] for c in self.calls if c[:2] == ("scontrol", "update")]


def sysfs(root: Path, ports: dict[str, tuple[str, str, str]]) -> Path:
    """A fake /sys/class/infiniband: {"mlx5_0/1": (link_layer, state, phys_state)}."""
    for name, (layer, state, phys) in ports.items():
        dev, port = name.split("/")
        d = root / dev / "ports" / port
        d.mkdir(parents=True)
        (d / "link_layer").write_text(layer + "\n")
        (d / "state").write_text(state + "\n")
        (d / "phys_state").write_text(phys + "\n")
    return root


def make_ctx(inv: Inventory, node: str, site: FakeSite) -> tuple[Context, list[str]]:
    said: list[str] = []

    def no_bmc() -> object:
        raise AssertionError("the health check does not use the BMC")

    ctx = Context(inventory=inv, node=inv.nodes[node], state_root=site.tmp / "state",
                  runner=site, boot=RecordingBootMode(), bmc=no_bmc,  # type: ignore[arg-type]
                  keys=MinionKeys(site, site.tmp / "pki"), say=said.append,
                  options=Options(health_timeout=0))
    return ctx, said


ACTIVE = ("InfiniBand", "4: ACTIVE", "5: LinkUp")
DOWN = ("InfiniBand", "1: DOWN", "2: Polling")
ETH_DOWN = ("Ethernet", "1: DOWN", "3: Disabled")  # a ConnectX in Ethernet mode: not IB


@pytest.fixture
def gpu_site(tmp_path: Path) -> FakeSite:
    root = sysfs(tmp_path / "ib", {"mlx5_0/1": ACTIVE, "mlx5_1/1": ETH_DOWN})
    return FakeSite(tmp_path, rewrite={health.SYS_IB: str(root)})


# --- a GPU node: GPUs, IB ports, slurmd ------------------------------------------------


def test_all_healthy(inventory: Inventory, gpu_site: FakeSite) -> None:
    ctx, _ = make_ctx(inventory, GPU, gpu_site)
    detail = health_step(ctx)
    assert detail == ("8 of 8 GPUs seen by nvidia-smi; 1 of 1 IB ports active; "
                      "slurmd registered")
    assert gpu_site.drains() == []
    assert [t for t, _ in gpu_site.salt_cmds()] == [GPU, GPU]  # no mkv call: not a volume
    assert not any("curl" in c for _, c in gpu_site.salt_cmds())
    pillar_reads = [c for c in gpu_site.calls if c[0] == "salt" and c[2] == "pillar.get"]
    assert len(pillar_reads) == 1  # asked once for both hardware checks


def test_one_ib_port_down_is_named_and_the_node_drained(inventory: Inventory,
                                                        tmp_path: Path) -> None:
    root = sysfs(tmp_path / "ib", {"mlx5_0/1": DOWN, "mlx5_1/1": ETH_DOWN})
    site = FakeSite(tmp_path, rewrite={health.SYS_IB: str(root)})
    ctx, _ = make_ctx(inventory, GPU, site)
    with pytest.raises(StepFailedError) as err:
        health_step(ctx)
    problem = "0 of 1 IB ports active; down: mlx5_0 port 1 (1: DOWN, 2: Polling)"
    assert str(err.value) == f"health check failed: {problem}"
    assert "mlx5_1" not in str(err.value)  # the Ethernet port is not an IB port
    [drain] = site.drains()
    assert drain == f"Reason=fleet reinstall: health check failed: {problem}"


def test_extra_down_port_beyond_the_inventory_count_is_healthy(inventory: Inventory,
                                                               tmp_path: Path) -> None:
    root = sysfs(tmp_path / "ib", {"mlx5_0/1": ACTIVE, "mlx5_0/2": DOWN})
    site = FakeSite(tmp_path, rewrite={health.SYS_IB: str(root)})
    detail = health_step(make_ctx(inventory, GPU, site)[0])
    assert "1 of 1 IB ports active; also down: mlx5_0 port 2 (1: DOWN, 2: Polling)" in detail
    assert site.drains() == []


def test_no_infiniband_device_at_all(inventory: Inventory, tmp_path: Path) -> None:
    site = FakeSite(tmp_path, rewrite={health.SYS_IB: str(tmp_path / "none")})
    with pytest.raises(StepFailedError, match=r"0 of 1 IB ports active; no InfiniBand "
                                              r"port in /sys/class/infiniband$"):
        health_step(make_ctx(inventory, GPU, site)[0])
    assert len(site.drains()) == 1


def test_problems_are_collected_and_fail_once(inventory: Inventory, tmp_path: Path) -> None:
    root = sysfs(tmp_path / "ib", {"mlx5_0/1": DOWN})
    site = FakeSite(tmp_path, rewrite={health.SYS_IB: str(root)},
                    cmd_out={"nvidia-smi": "GPU 0: NVIDIA GeForce RTX 4090"},
                    scontrol=Result(("scontrol",), 0, "NodeName=gpu-01 State=DOWN+"
                                    "NOT_RESPONDING\n", ""))
    with pytest.raises(StepFailedError) as err:
        health_step(make_ctx(inventory, GPU, site)[0])
    assert str(err.value) == (
        "health check failed: 1 of 8 GPUs seen by nvidia-smi; 0 of 1 IB ports active; "
        "down: mlx5_0 port 1 (1: DOWN, 2: Polling); slurmd has not registered "
        "(NOT_RESPONDING)")
    assert len(site.drains()) == 1


def test_a_failing_command_does_not_hide_the_other_checks(inventory: Inventory,
                                                          gpu_site: FakeSite) -> None:
    gpu_site.scontrol = Result(("scontrol", "show", "node", GPU), 1, "",
                               "slurm_load_node error: Unable to contact slurm controller")
    with pytest.raises(StepFailedError) as err:
        health_step(make_ctx(inventory, GPU, gpu_site)[0])
    assert str(err.value) == ("health check failed: slurmd not checked: `scontrol show node "
                              "gpu-01` exited 1: slurm_load_node error: Unable to contact "
                              "slurm controller")
    assert len(gpu_site.drains()) == 1


def test_no_hardware_skips_gpus_and_ib_with_the_reason(inventory: Inventory,
                                                       gpu_site: FakeSite) -> None:
    gpu_site.hardware = False
    detail = health_step(make_ctx(inventory, GPU, gpu_site)[0])
    assert detail == ("GPU count not checked (fleet:hardware false); IB ports not checked "
                      "(fleet:hardware false); slurmd registered")
    assert gpu_site.salt_cmds() == []  # neither nvidia-smi nor the sysfs read ran


# --- a storage node: the mkv volume -----------------------------------------------------


class _Server:
    def __init__(self, status: int) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.paths.append(self.path)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def servers() -> Iterator[list[_Server]]:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    started: list[_Server] = []
    yield started
    for s in started:
        s.stop()


def mkv_site(tmp: Path, servers: list[_Server], volume: int | None,
             master: int | None) -> FakeSite:
    """The volume stor-1:3001 and master head-01:3000 answer with these statuses (None:
    nothing listens)."""
    ports = []
    for status in (volume, master):
        if status is None:
            ports.append(closed_port())
        else:
            servers.append(_Server(status))
            ports.append(servers[-1].port)
    return FakeSite(tmp, rewrite={"stor-1:3001": f"127.0.0.1:{ports[0]}",
                                  "head-01:3000": f"127.0.0.1:{ports[1]}"})


def test_mkv_volume_answering(inventory: Inventory, tmp_path: Path,
                              servers: list[_Server]) -> None:
    site = mkv_site(tmp_path, servers, volume=200, master=404)
    ctx, said = make_ctx(inventory, STOR, site)
    detail = health_step(ctx)
    assert detail == ("mkv volume http://stor-1:3001/ answers (HTTP 200, from head-01); "
                      "mkv master http://head-01:3000/ answers (HTTP 404)")
    # asked from the array's master, at the name in its -volumes list
    [(target, cmd)] = site.salt_cmds()
    assert target == "head-01"
    assert "http://stor-1:3001/" in cmd and "http://head-01:3000/" in cmd
    assert [s.paths for s in servers] == [["/"], ["/"]]
    assert not [c for c in site.calls if c[0] == "scontrol"]  # not a Slurm node
    assert not [c for c in site.calls if c[0] == "salt" and c[2] == "pillar.get"]
    assert ctx.warnings == [] and said == []


def test_mkv_volume_5xx_fails(inventory: Inventory, tmp_path: Path,
                              servers: list[_Server]) -> None:
    site = mkv_site(tmp_path, servers, volume=503, master=404)
    with pytest.raises(StepFailedError) as err:
        health_step(make_ctx(inventory, STOR, site)[0])
    assert str(err.value) == ("health check failed: mkv volume http://stor-1:3001/ answers "
                              "HTTP 503 (from head-01)")
    assert site.drains() == []  # not a Slurm node: nothing to drain


def test_mkv_volume_not_answering_fails(inventory: Inventory, tmp_path: Path,
                                        servers: list[_Server]) -> None:
    site = mkv_site(tmp_path, servers, volume=None, master=404)
    with pytest.raises(StepFailedError) as err:
        health_step(make_ctx(inventory, STOR, site)[0])
    assert str(err.value) == ("health check failed: mkv volume http://stor-1:3001/ does not "
                              "answer (from head-01)")


def test_mkv_master_down_is_a_warning_not_a_failure(inventory: Inventory, tmp_path: Path,
                                                    servers: list[_Server]) -> None:
    site = mkv_site(tmp_path, servers, volume=200, master=None)
    ctx, said = make_ctx(inventory, STOR, site)
    detail = health_step(ctx)
    warning = "mkv master of array 'data' (http://head-01:3000/) does not answer"
    assert detail == ("mkv volume http://stor-1:3001/ answers (HTTP 200, from head-01); "
                      f"warned: {warning}")
    assert ctx.warnings == [warning]
    assert said == [f"WARNING: {warning}"]


def test_mkv_master_minion_silent_fails_the_check(inventory: Inventory,
                                                  tmp_path: Path) -> None:
    site = FakeSite(tmp_path, cmd_out={"curl": "Minion did not return. [No response]"})
    with pytest.raises(StepFailedError, match=r"mkv volume http://stor-1:3001/ not checked: "
                                              r"head-01 answered 'Minion did not return"):
        health_step(make_ctx(inventory, STOR, site)[0])


def test_non_mkv_node_is_not_checked_for_mkv(inventory: Inventory,
                                             gpu_site: FakeSite) -> None:
    detail = health_step(make_ctx(inventory, GPU, gpu_site)[0])
    assert "mkv" not in detail
    assert all("curl" not in cmd and target == GPU for target, cmd in gpu_site.salt_cmds())


def test_checks_are_retried_until_they_pass(inventory: Inventory, gpu_site: FakeSite) -> None:
    """A node that has just converged may still be registering slurmd: the gate asks
    again (within --health-timeout) before it fails and drains."""
    answers = [Result(("scontrol",), 0, "NodeName=gpu-01 State=DOWN+NOT_RESPONDING\n", ""),
               Result(("scontrol",), 0, SCONTROL_OK, "")]
    real_run = gpu_site.run

    def run(argv: Sequence[str], *, timeout: float = 120) -> Result:
        if tuple(argv[:3]) == ("scontrol", "show", "node") and answers:
            gpu_site.calls.append(tuple(argv))
            return answers.pop(0)
        return real_run(argv, timeout=timeout)

    gpu_site.run = run  # type: ignore[method-assign]
    ctx, said = make_ctx(inventory, GPU, gpu_site)
    ctx.options = Options(health_timeout=30, poll=0.01)
    assert health_step(ctx).endswith("slurmd registered")
    assert gpu_site.drains() == []
    assert any("NOT_RESPONDING" in line and "checking again" in line for line in said)
