"""commission/fleet-commission, the commissioning environment's script, run here under
/bin/sh: it gathers the facts, posts them with the real curl to the real endpoint (from the
address the leases file gives its MAC), and powers off; it never touches a disk.

What cannot exist here is faked and named so: the machine's /sys and /proc (a tree written
below, shaped as the kernel writes it), and dmidecode, lspci, smartctl, ipmitool, lldpd and
lldpcli (shell stand-ins printing what those tools print on a TinyBox: no DMI tables, no
GPUs, no BMC and no switch here)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from discover.endpoint import commission_endpoint
from discover.sites import ROOT
from fleet.discover import store
from fleet.reinstall.server import CallbackServer

SCRIPT = ROOT / "commission" / "fleet-commission"
BOOT_MAC, ADDR = "0c:42:a1:aa:00:01", "127.0.0.5"

FAKES = {  # stand-ins, named as such: no hardware behind them here
    "dmidecode": r"""
case "$*" in
  "-s system-serial-number") printf '%s\n' 'TBP"NEW\0001' ;;
  "-s system-product-name") printf 'TinyBox Pro\033[31m\n' ;;
  "-s system-manufacturer") echo tinygrad ;;
  "-s baseboard-product-name") echo MZ73-LM0 ;;
  "-s baseboard-serial-number") echo '# SMBIOS entry point'; echo B1 ;;
  "-t 17") for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
      printf 'Handle 0x00%02d, DMI type 17, 92 bytes\nMemory Device\n\tSize: 32 GB\n' $i
      printf '\tLocator: DIMM "%s"\n\tBank Locator: P0\n\n' $i; done
    printf 'Memory Device\n\tSize: No Module Installed\n\tLocator: DIMM 12\n' ;;
esac""",
    "lspci": r"""
gpu='"VGA compatible controller [0300]" "NVIDIA Corporation [10de]"'
gpu="$gpu \"AD102 [GeForce RTX 4090] [2684]\" -ra1 \"Gigabyte [1458]\" \"Device [40bf]\""
for i in 41 42 43 44 45 46 47 48; do echo "0000:$i:00.0 $gpu"; done
mlx='"Mellanox Technologies [15b3]"'
echo "0000:01:00.0 \"Infiniband controller [0207]\" $mlx \"MT28908 Family [ConnectX-6] [101b]\""
echo "0000:02:00.0 \"Ethernet controller [0200]\" $mlx \"MT2892 Family [ConnectX-6 Dx] [101d]\""
""",
    "smartctl": 'echo "SMART overall-health self-assessment test result: PASSED"',
    "ipmitool": 'echo "MAC Address             : A8:A1:59:AA:00:01"',
    "lldpd": "exit 0",
    "pgrep": "exit 1",
    "ip": 'echo "$@" >> "$FLEET_LOG"',
    "lldpcli": r"""
echo 'lldp.enp65s0f0.via=LLDP'
echo 'lldp.enp65s0f0.chassis.mac=aa:bb:cc:00:00:01'
echo 'lldp.enp65s0f0.chassis.name=sw1'
echo 'lldp.enp65s0f0.port.ifname=ethernet1/1/3'
echo 'lldp.enp65s0f0.port.descr=tbox-003 prov'
""",
    "poweroff": 'echo "poweroff $*" >> "$FLEET_LOG"',
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def machine(root: Path) -> tuple[Path, Path]:
    """A /sys and /proc of a TinyBox, as the kernel writes the files read."""
    sys_, proc = root / "sys", root / "proc"
    cpu = "".join(f"processor\t: {i}\nmodel name\t: AMD EPYC 9354 32-Core Processor\n"
                  f"physical id\t: {i // 64}\nsiblings\t: 64\ncpu cores\t: 32\n\n"
                  for i in range(128))
    write(proc / "cpuinfo", cpu)
    write(proc / "meminfo", "MemTotal:       395936128 kB\nMemFree:  1 kB\n")
    write(sys_ / "block/nvme0n1/size", "1953525168\n")
    write(sys_ / "block/nvme0n1/device/model", "SAMSUNG MZQL21T9HCJR-00A07\n")
    write(sys_ / "block/nvme0n1/device/serial", "S64GNE0R\n")
    write(sys_ / "block/loop0/size", "8\n")
    for name, mac, typ, speed in (("enp65s0f0", BOOT_MAC.upper(), "1", "100000"),
                                  ("enp65s0f1", "0c:42:a1:aa:00:02", "1", "-1"),
                                  ("ibp1s0", "00:00:10:49:fe:80:00:00:00:00:00:00:10:70:fd:"
                                             "03:00:aa:00:01", "32", "200000"),
                                  ("docker0", "02:42:00:00:00:01", "1", "")):
        write(sys_ / f"class/net/{name}/address", mac + "\n")
        write(sys_ / f"class/net/{name}/type", typ + "\n")
        write(sys_ / f"class/net/{name}/speed", speed + "\n")
        if name != "docker0":
            (sys_ / f"class/net/{name}/device").mkdir()
    write(sys_ / "bus/pci/devices/0000:01:00.0/infiniband/mlx5_0/node_guid",
          "1070:fd03:00aa:0001\n")
    write(sys_ / "bus/pci/devices/0000:41:00.0/current_link_width", "16\n")
    write(sys_ / "bus/pci/devices/0000:41:00.0/current_link_speed", "16.0 GT/s PCIe\n")
    return sys_, proc


@dataclass
class Env:
    server: CallbackServer
    root: Path
    env: dict[str, str]
    log: Path


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    server, reports = commission_endpoint(tmp_path, BOOT_MAC, ADDR, 2.0)
    bin_ = tmp_path / "bin"
    for name, body in FAKES.items():
        write(bin_ / name, "#!/bin/sh\n" + body.lstrip("\n") + "\n")
        (bin_ / name).chmod(0o755)
    sys_, proc = machine(tmp_path)
    cmdline = tmp_path / "cmdline"
    cmdline.write_text(f"BOOT_IMAGE=vmlinuz initrd=initrd fleet.report={server.url}/v1/"
                       f"discover/ fleet.boot_mac={BOOT_MAC} "
                       "console=ttyS0\n")
    log = tmp_path / "log"
    full = {"PATH": f"{bin_}:{os.environ['PATH']}", "FLEET_CMDLINE": str(cmdline),
            "FLEET_SYS": str(sys_), "FLEET_PROC": str(proc), "FLEET_LLDP_WAIT": "2",
            "FLEET_RUN": str(tmp_path / "run"),
            "FLEET_POWEROFF": "poweroff -f", "FLEET_LOG": str(log),
            "FLEET_CURL_OPTS": f"--interface {ADDR}",
            "FLEET_REPORT": str(tmp_path / "report.json")}
    yield Env(server, reports, full, log)
    server.stop()


def run(env: Env) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", str(SCRIPT)], env=env.env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_script_reports_what_the_machine_has_and_powers_off(env: Env) -> None:
    r = run(env)
    assert "the master answered 200" in r.stderr, r.stderr
    assert env.log.read_text().splitlines()[-1] == "poweroff -f"
    got = store.load_all(env.root)[BOOT_MAC]
    assert isinstance(got, store.Received) and got.peer == ADDR
    rep = got.report
    assert rep.dmi.serial == 'TBP"NEW\\0001' and rep.dmi.product == "TinyBox Pro[31m"
    assert rep.dmi.board_serial == "B1"
    assert (rep.cpus.sockets, rep.cpus.cores_per_socket, rep.cpus.threads_per_core) == (
        2, 32, 2)
    assert len(rep.memory.dimms) == 12 and rep.memory.dimms[0].locator == "DIMM 0"
    assert sum(d.size_mb for d in rep.memory.dimms) == 384 * 1024
    assert [(d.name, d.size_bytes, d.transport, d.smart_ok) for d in rep.disks] == [
        ("nvme0n1", 1953525168 * 512, "nvme", True)]
    assert [(n.name, n.mac, n.speed_mbps) for n in rep.nics] == [
        ("enp65s0f0", BOOT_MAC, 100000), ("enp65s0f1", "0c:42:a1:aa:00:02", None)]
    lldp = rep.nics[0].lldp
    assert lldp is not None and (lldp.chassis_name, lldp.port_id, lldp.port_id_type) == (
        "sw1", "ethernet1/1/3", "ifname")
    assert rep.gpus() == 8 and rep.hca_guids() == ["0x1070fd0300aa0001"]
    assert rep.pci[0].link_width == 16 and rep.pci[0].link_speed == "16.0 GT/s PCIe"
    assert rep.bmc_mac == "a8:a1:59:aa:00:01"


def test_refused_it_still_powers_off_and_does_not_retry(env: Env) -> None:
    env.env["FLEET_CURL_OPTS"] = "--interface 127.0.0.1"  # not the leased address
    r = run(env)
    assert r.stderr.count("the master answered 403") == 1, r.stderr
    assert "the report was not taken" in r.stderr
    assert env.log.read_text().splitlines()[-1] == "poweroff -f"
    assert not env.root.exists()


# commands that write to a block device, its partition table or a filesystem
WRITES = re.compile(r"\b(mkfs|mke2fs|dd|wipefs|sgdisk|sfdisk|parted|fdisk|blkdiscard|"
                    r"mount|nvme\s+(format|sanitize|write)|hdparm|badblocks|fio|"
                    r"smartctl\s+-t)\b|>\s*/dev/(sd|nvme|vd|hd)")


def test_the_script_has_no_command_that_writes_a_disk() -> None:
    code = [ln for ln in SCRIPT.read_text().splitlines() if not ln.lstrip().startswith("#")]
    assert [ln for ln in code if WRITES.search(ln)] == []
    assert WRITES.search("dd if=/dev/zero of=/dev/sda")  # the check can fail
