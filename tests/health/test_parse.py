"""Parsing of what nodes and Slurm answer (fleet.health.parse), on their real formats."""

from __future__ import annotations

import pytest

from fleet.health import parse
from fleet.master import slurm, text
from health.fakesite import CHRONY_OK, CHRONY_UNSYNCED, UNMUNGE_OK, scontrol_line


def test_clean_keeps_one_printable_ascii_line() -> None:
    assert text.clean("a\nb\tc\x1b[2J$(rm -rf /)") == "a b c [2J$(rm -rf /)"
    out = text.clean("x" * 300, 50)
    assert len(out) == 50 and out.endswith("...")
    assert all(" " <= c <= "~" for c in text.clean("é\u202e\x00ok"))


def test_ib_ports_only_infiniband_link_layer() -> None:
    out = ("mlx5_0/ports/1|InfiniBand|4: ACTIVE|5: LinkUp\n"
           "mlx5_1/ports/1|Ethernet|4: ACTIVE|5: LinkUp\n"
           "mlx5_2/ports/1|InfiniBand|1: DOWN|3: Disabled\n")
    ports = parse.ib_ports(out)
    assert ports.active == ["mlx5_0 port 1"]
    assert ports.down == ["mlx5_2 port 1 (1: DOWN, 3: Disabled)"]
    assert parse.ib_verdict(ports, 1) == (True, "1 of 1 IB ports active; also down: "
                                                "mlx5_2 port 1 (1: DOWN, 3: Disabled)")
    assert parse.ib_verdict(ports, 2)[0] is False
    good, text = parse.ib_verdict(parse.ib_ports(""), 1)
    assert not good and "no InfiniBand port" in text


def test_gpus_and_persistence() -> None:
    out = "0, 00000000:01:00.0, Enabled\n1, 00000000:41:00.0, Disabled\n"
    found = parse.gpus(out)
    assert [g.persistence for g in found] == [True, False]
    assert parse.gpu_verdict(found, 2) == (False, "2 of 2 GPUs seen by nvidia-smi; "
                                                  "persistence mode off on GPU 1")
    assert parse.gpu_verdict(parse.gpus(out.splitlines()[0]), 1)[0] is True
    # no driver: nvidia-smi's error text is no GPU
    assert parse.gpus("NVIDIA-SMI has failed because it couldn't communicate with the "
                      "NVIDIA driver.") == []


def test_xid_lines_from_the_kernel_log() -> None:
    log = ("NVRM: Xid (PCI:0000:c1:00): 79, pid=0, GPU has fallen off the bus.\n"
           "NVRM: Xid (PCI:0000:01:00): 13, pid=4242, name=python3, Graphics Exception\n")
    found = parse.xids(log)
    assert [(x.bus, x.code) for x in found] == [("0000:c1:00", 79), ("0000:01:00", 13)]
    assert parse.xid_verdict(found)[0] is False
    assert parse.xid_verdict(found[1:])[:2] == (True, True)
    assert parse.xid_verdict([]) == (True, False, "no NVIDIA Xid in the kernel log since boot")


def test_scontrol_one_line_per_node_with_spaces_in_values() -> None:
    out = "\n".join([scontrol_line("gpu-01"),
                     scontrol_line("gpu-02", "IDLE+DRAIN", reason="fleet health: a=b; x y"),
                     scontrol_line("gpu-03", "DOWN+NOT_RESPONDING", gres="gpu:rtx4090:8")])
    nodes = slurm.scontrol_nodes(out)
    assert list(nodes) == ["gpu-01", "gpu-02", "gpu-03"]
    assert nodes["gpu-01"]["State"] == "IDLE"
    assert nodes["gpu-01"]["OS"].startswith("Linux 6.1.0-28-amd64 #1 SMP")
    assert nodes["gpu-02"]["Reason"] == "fleet health: a=b; x y [root@2026-12-01T09:40:00]"
    assert slurm.reason_text(nodes["gpu-02"]["Reason"]) == "fleet health: a=b; x y"
    assert parse.slurmd_verdict(nodes["gpu-01"], 8) == (
        True, "slurmd registered (State=IDLE, gpu:8)")
    assert parse.slurmd_verdict(nodes["gpu-02"], 8)[0] is True  # drained is not unhealthy
    assert parse.slurmd_verdict(nodes["gpu-01"], 6)[1] == (
        "slurmd reports Gres gpu:rtx4090:8(S:0-1), not gpu:6")
    assert parse.slurmd_verdict(nodes["gpu-03"], 8)[0] is False
    assert parse.slurmd_verdict(None, 8) == (False, "slurmctld does not know the node")


@pytest.mark.parametrize(("gres", "gpus"), [("gpu:tinybox:6(S:0-1)", 6), ("gpu:8", 8),
                                            ("gpu:a:2,gpu:b:2(S:0)", 4), ("(null)", None),
                                            ("", None)])
def test_gres_gpus(gres: str, gpus: int | None) -> None:
    assert slurm.gres_gpus(gres) == gpus


def test_state_flags() -> None:
    assert slurm.state_flags("IDLE+DRAIN") == {"IDLE", "DRAIN"}
    assert slurm.state_flags("DOWN*") == {"DOWN", "NOT_RESPONDING"}
    assert slurm.state_flags("MIXED+DRAIN+NOT_RESPONDING") == {"MIXED", "DRAIN",
                                                                "NOT_RESPONDING"}


def test_systemctl_show_blocks() -> None:
    out = ("Id=slurmd.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\n\n"
           "Id=nope.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n")
    units = parse.systemctl_show(out)
    assert parse.unit_verdict("slurmd.service", units["slurmd.service"]) == (
        False, "slurmd.service: failed (failed)")
    assert parse.unit_verdict("nope.service", units["nope.service"]) == (
        False, "nope.service: not installed")
    assert parse.unit_verdict("x.service", None) == (False, "x.service: not reported")


def test_munge() -> None:
    assert parse.munge_verdict(UNMUNGE_OK) == (True, "munge credential: Success (0)")
    assert parse.munge_verdict("STATUS: Expired credential (15)")[0] is False
    assert parse.munge_verdict("munge: Error: Unable to access \"/run/munge/munge.socket.2\"")[
        0] is False


def test_chrony() -> None:
    good, text = parse.chrony_verdict(CHRONY_OK)
    assert good and text == ("chrony: synchronised to 0A010001 (10.1.0.1), stratum 9, "
                             "offset 0.0 ms")
    assert parse.chrony_verdict(CHRONY_UNSYNCED)[0] is False
    far = CHRONY_OK.replace("0.000012034 seconds fast", "2.500000000 seconds slow")
    good, text = parse.chrony_verdict(far)
    assert not good and "2.500s slow" in text
    assert parse.chrony_verdict("506 Cannot talk to daemon")[0] is False


def test_mounts() -> None:
    active = {"/": {}, "/srv/mkv/sv00": {}, "/srv/mkv/sv01": {}}
    assert parse.mount_verdict(active, ["/srv/mkv/sv00", "/srv/mkv/sv01"]) == (
        True, "2 data disks mounted")
    good, text = parse.mount_verdict(active, ["/srv/mkv/sv00", "/srv/mkv/sv02"])
    assert not good and "/srv/mkv/sv02" in text and "sv00" not in text
    assert parse.mount_verdict("Minion did not return", ["/srv/mkv/sv00"])[0] is False


def test_http_codes() -> None:
    assert parse.http_codes("volume:stor-1 200\nmaster:data 000\nnoise\n") == {
        "volume:stor-1": 200, "master:data": 0}
