"""fleet's textfile collectors (salt/monitoring/files), run as the timers run them: real
processes against fixture command output. nvidia-smi, sinfo, squeue and sdiag are
stand-ins here (shell scripts named stand-in-*) that print the fixtures: this host has
no GPU and no Slurm controller. Their output must parse with promtool check metrics."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import promtool
import pytest
from tests_paths import ROOT

FILES = ROOT / "salt" / "monitoring" / "files"
FIXTURES = Path(__file__).with_name("fixtures")
GPU = FILES / "fleet-gpu-metrics.py"
SLURM = FILES / "fleet-slurm-metrics.py"
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def _stand_in(path: Path, fixture: Path | None, rc: int = 0) -> Path:
    body = f"cat {fixture}\n" if fixture else ""
    path.write_text(f"#!/bin/sh\n# stand-in for a command this host lacks\n{body}exit {rc}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            m = SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            out[m[1] + (m[2] or "")] = float(m[3])
    return out


def _collect(script: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), "--out", str(out), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def _lint(text: str) -> None:
    """promtool's parser and its naming lint (fleet_* names only: DCGM's are DCGM's)."""
    proc = promtool.run("check", "metrics", stdin=text)
    assert proc.returncode == 0, proc.stdout + proc.stderr


NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
NO_EXPORTER = ("LOUD SKIP: prometheus-node-exporter is not installed (tools/install-host-deps.sh): "
               "the collectors' files are NOT read by the exporter")


def _read_by_node_exporter(textfile_dir: Path) -> dict[str, float]:
    """The textfile collector of the real node_exporter reads the directory: its samples,
    and no scrape error."""
    if not Path(NODE_EXPORTER).exists():
        pytest.skip(NO_EXPORTER)
    s = _samples(_exporter(["--collector.disable-defaults", "--collector.textfile",
                            f"--collector.textfile.directory={textfile_dir}"]))
    assert s["node_textfile_scrape_error"] == 0
    return s


def test_gpu_collector_writes_dcgm_names(tmp_path: Path) -> None:
    smi = _stand_in(tmp_path / "stand-in-nvidia-smi", FIXTURES / "nvidia-smi-query.csv")
    out = tmp_path / "fleet-gpu.prom"
    proc = _collect(GPU, out, "--nvidia-smi", str(smi),
                    "--kernel-log", f"cat {FIXTURES / 'kernel-xid.log'}")
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    s = _samples(text)
    assert s["fleet_gpus_visible"] == 8 and s["fleet_gpu_smi_ok"] == 1

    def one(name: str, gpu: int) -> float:
        (value,) = [v for k, v in s.items() if k.startswith(name + "{") and f'gpu="{gpu}"' in k]
        return value

    assert one("DCGM_FI_DEV_GPU_TEMP", 3) == 43
    assert one("DCGM_FI_DEV_POWER_USAGE", 1) == 101.5
    assert one("DCGM_FI_DEV_GPU_UTIL", 4) == 40
    assert one("DCGM_FI_DEV_FB_USED", 2) == 2048
    assert one("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0) == 0
    # [N/A] (no ECC on that board) is left out, not written as 0
    assert not [k for k in s if k.startswith("DCGM_FI_DEV_ECC") and 'gpu="7"' in k]
    # Xid messages land on the GPU of their PCI address: the last code, and how many
    assert (one("DCGM_FI_DEV_XID_ERRORS", 2), one("fleet_gpu_xid_errors_total", 2)) == (31, 2)
    assert (one("DCGM_FI_DEV_XID_ERRORS", 5), one("fleet_gpu_xid_errors_total", 5)) == (79, 1)
    assert one("fleet_gpu_xid_errors_total", 0) == 0
    assert 'UUID="GPU-00000003-aaaa-bbbb-cccc-000000000000"' in text
    read = _read_by_node_exporter(tmp_path)
    assert {k: v for k, v in read.items() if k.startswith(("DCGM_", "fleet_"))} == s


def test_gpu_collector_reports_a_missing_gpu_and_a_failed_nvidia_smi(tmp_path: Path) -> None:
    seven = tmp_path / "seven.csv"
    seven.write_text("".join((FIXTURES / "nvidia-smi-query.csv").read_text()
                             .splitlines(keepends=True)[:7]))
    out = tmp_path / "fleet-gpu.prom"
    smi = _stand_in(tmp_path / "stand-in-nvidia-smi", seven)
    assert _collect(GPU, out, "--nvidia-smi", str(smi), "--kernel-log", "true").returncode == 0
    assert _samples(out.read_text())["fleet_gpus_visible"] == 7
    broken = _stand_in(tmp_path / "stand-in-nvidia-smi-failing", None, rc=9)
    assert _collect(GPU, out, "--nvidia-smi", str(broken), "--kernel-log", "true").returncode == 0
    s = _samples(out.read_text())
    assert (s["fleet_gpus_visible"], s["fleet_gpu_smi_ok"]) == (0, 0)
    assert _read_by_node_exporter(tmp_path)["fleet_gpus_visible"] == 0


def test_gpu_collector_leaves_the_old_file_on_output_it_does_not_know(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("0, GPU-x, only, three\n")
    out = tmp_path / "fleet-gpu.prom"
    out.write_text("fleet_gpus_visible 8\n")
    smi = _stand_in(tmp_path / "stand-in-nvidia-smi", bad)
    proc = _collect(GPU, out, "--nvidia-smi", str(smi), "--kernel-log", "true")
    assert proc.returncode == 1 and "4 fields, not 11" in proc.stderr
    assert out.read_text() == "fleet_gpus_visible 8\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".fleet-")] == []


def _slurm_bin(tmp_path: Path, sinfo_rc: int = 0) -> Path:
    b = tmp_path / "bin"
    b.mkdir()
    _stand_in(b / "sinfo", FIXTURES / "sinfo.txt", sinfo_rc)
    _stand_in(b / "squeue", FIXTURES / "squeue.txt")
    _stand_in(b / "sdiag", FIXTURES / "sdiag.txt")
    return b


def test_slurm_collector_counts_states_jobs_and_cycles(tmp_path: Path) -> None:
    out = tmp_path / "fleet-slurm.prom"
    proc = _collect(SLURM, out, "--bin", str(_slurm_bin(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    s = _samples(text)
    assert s["fleet_slurm_up"] == 1
    assert s['fleet_slurm_nodes{partition="tbox1",state="idle"}'] == 2  # idle and idle~
    assert s['fleet_slurm_nodes{partition="tbox2",state="idle"}'] == 1
    assert s['fleet_slurm_nodes{partition="tbox1",state="drained"}'] == 1
    assert s['fleet_slurm_nodes{partition="tbox2",state="down"}'] == 1
    assert s['fleet_slurm_jobs{partition="tbox1",state="RUNNING"}'] == 2
    assert s['fleet_slurm_jobs{partition="tbox2",state="PENDING"}'] == 2
    assert s['fleet_slurm_jobs{partition="tbox2",state="RUNNING"}'] == 0
    assert s['fleet_slurm_scheduler_cycle_seconds{scheduler="main",stat="last"}'] == 0.00152
    assert s['fleet_slurm_scheduler_cycle_seconds{scheduler="backfill",stat="max"}'] == 0.0091
    assert s["fleet_slurm_server_threads"] == 3
    drained = {k: v for k, v in s.items() if k.startswith("fleet_slurm_node_drained_since")}
    assert set(drained) == {
        'fleet_slurm_node_drained_since_seconds{reason="gpu 3 Xid 79",slurm_node="tbox-003"}',
        'fleet_slurm_node_drained_since_seconds{reason="fleet rollout wave 2",'
        'slurm_node="tbox-004"}'}
    assert drained['fleet_slurm_node_drained_since_seconds{reason="gpu 3 Xid 79",'
                   'slurm_node="tbox-003"}'] == datetime(2026, 11, 30, 8, 15).timestamp()
    _lint(text)
    read = _read_by_node_exporter(tmp_path)
    assert {k: v for k, v in read.items() if k.startswith("fleet_")} == s


def test_slurm_collector_says_the_controller_is_down(tmp_path: Path) -> None:
    out = tmp_path / "fleet-slurm.prom"
    assert _collect(SLURM, out, "--bin", str(_slurm_bin(tmp_path, sinfo_rc=1))).returncode == 0
    assert _samples(out.read_text()) == {"fleet_slurm_up": 0}


def test_textfile_writer_escapes_label_values(tmp_path: Path) -> None:
    sys.path.insert(0, str(FILES))
    try:
        import fleet_textfile
    finally:
        sys.path.remove(str(FILES))
    m = fleet_textfile.Metrics()
    m.declare("fleet_x", "gauge", "x.")
    m.add("fleet_x", 1, reason='a "quoted"\\ reason\nwith a newline')
    text = m.text()
    assert 'reason="a \\"quoted\\"\\\\ reason\\nwith a newline"' in text
    _lint(text)
    with pytest.raises(ValueError):
        m.declare("bad-name", "gauge", "x.")


# --- InfiniBand: node_exporter's own collector over a fixture sysfs tree -----------------

def _ib_fixture_sysfs(root: Path, state: str) -> Path:
    """A fixture /sys/class/infiniband with one HCA port (not a real device); with the
    port's hw_counters directory, as an mlx5 HCA has it (node_exporter 1.7, Ubuntu 24.04's,
    reports no InfiniBand data without it; Debian 12's 1.5 does not look)."""
    d = root / "class" / "infiniband" / "mlx5_0"
    (d / "ports" / "1" / "counters").mkdir(parents=True)
    (d / "ports" / "1" / "hw_counters").mkdir()
    for name, value in (("board_id", "MT_0000000224"), ("fw_ver", "20.31.1014"),
                        ("hca_type", "MT4123")):
        (d / name).write_text(value + "\n")
    (d / "ports" / "1" / "state").write_text(state + "\n")
    (d / "ports" / "1" / "phys_state").write_text("5: LinkUp\n")
    (d / "ports" / "1" / "rate").write_text("200 Gb/sec (4X HDR)\n")
    for counter in ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                    "port_rcv_remote_physical_errors", "local_link_integrity_errors",
                    "excessive_buffer_overrun_errors", "port_xmit_discards", "port_rcv_data",
                    "port_xmit_data", "port_rcv_packets", "port_xmit_packets"):
        (d / "ports" / "1" / "counters" / counter).write_text("7\n")
    return root


@pytest.mark.skipif(not Path(NODE_EXPORTER).exists(), reason=NO_EXPORTER)
@pytest.mark.parametrize("state, state_id", [("4: ACTIVE", 4), ("1: DOWN", 1)])
def test_node_exporter_ib_collector_exports_what_the_rules_use(
        tmp_path: Path, state: str, state_id: int) -> None:
    from fleet.render import monitoring

    sysfs = _ib_fixture_sysfs(tmp_path / "sys", state)
    text = _exporter([f"--path.sysfs={sysfs}", "--collector.disable-defaults",
                      "--collector.infiniband"])
    s = _samples(text)
    assert s['node_infiniband_state_id{device="mlx5_0",port="1"}'] == state_id
    for counter in monitoring.IB_ERRORS:
        assert s[f'node_infiniband_{counter}{{device="mlx5_0",port="1"}}'] == 7, counter


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _exporter(args: list[str]) -> str:
    """One scrape of a real node_exporter with ``args``, on a loopback port."""
    port = _free_port()
    proc = subprocess.Popen([NODE_EXPORTER, *args, f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return _scrape(port, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _scrape(port: int, proc: subprocess.Popen[bytes]) -> str:
    import time
    import urllib.request

    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return str(r.read().decode())
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
