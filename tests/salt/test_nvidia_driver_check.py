"""salt/nvidia/files/fleet-nvidia-driver-check.py against real dpkg databases.

Each case writes a dpkg admin directory (status + file lists) with the records that the
Ubuntu 24.04 archive had on 2026-12-01 (apt-cache show: the 570-server packages are empty
and pull their 580-server counterparts) and runs the script with `--admindir`, so the real
dpkg-query reads them, as it reads /var/lib/dpkg on a node.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "salt" / "nvidia" / "files" / "fleet-nvidia-driver-check.py"

if shutil.which("dpkg-query") is None:  # the fleet's machines are Debian/Ubuntu
    pytest.fail("dpkg-query is not installed: these tests need a Debian/Ubuntu machine",
                pytrace=False)

DOC = ["/.", "/usr", "/usr/share", "/usr/share/doc"]
# name -> (version, depends, description, files beyond /usr/share/doc)
NOBLE: dict[str, tuple[str, str, str, list[str]]] = {
    "linux-modules-nvidia-570-server-open-generic": (
        "6.8.0-151.151", "linux-modules-nvidia-580-server-open-generic",
        "Extra drivers for nvidia-570-server-open for the generic flavour "
        "(dummy transitional package)", []),
    "nvidia-utils-570-server": (
        "570.211.01-0ubuntu1.24.04.1", "nvidia-utils-580-server",
        "NVIDIA Server Driver support binaries", []),
    "libnvidia-compute-570-server": (
        "570.211.01-0ubuntu1.24.04.1", "libnvidia-compute-580-server",
        "NVIDIA libcompute package", []),
    "linux-modules-nvidia-580-server-open-generic": (
        "6.8.0-151.151",
        "linux-modules-nvidia-580-server-open-6.8.0-151-generic (= 6.8.0-151.151), "
        "nvidia-kernel-common-580-server (>= 580.178.04)",
        "Extra drivers for nvidia-580-server-open for the generic flavour", []),
    "linux-modules-nvidia-580-server-open-6.8.0-151-generic": (
        "6.8.0-151.151", "", "Linux kernel nvidia modules for version 6.8.0-151",
        ["/lib/modules/6.8.0-151-generic/kernel/nvidia-580srv-open/nvidia.ko.zst"]),
    "nvidia-kernel-common-580-server": (
        "580.178.04-0ubuntu0.24.04.1", "", "Shared files used with the kernel module",
        ["/lib/udev/rules.d/71-nvidia.rules"]),
    "nvidia-utils-580-server": (
        "580.178.04-0ubuntu0.24.04.1",
        "libc6 (>= 2.34), libnvidia-compute-580-server (>= 580.178.04)",
        "NVIDIA Server Driver support binaries", ["/usr/bin/nvidia-smi"]),
    "libnvidia-compute-580-server": (
        "580.178.04-0ubuntu0.24.04.1", "libc6 (>= 2.34)", "NVIDIA libcompute package",
        ["/usr/lib/x86_64-linux-gnu/libcuda.so.580.178.04"]),
    # an empty package that pulls another branch, without saying "transitional"
    "nvidia-headless-no-dkms-570-server-open": (
        "570.211.01-0ubuntu1.24.04.1", "nvidia-headless-no-dkms-580-server-open",
        "NVIDIA headless metapackage - no DKMS (open kernel module)", []),
    "nvidia-headless-no-dkms-580-server-open": (
        "580.178.04-0ubuntu0.24.04.1",
        "nvidia-kernel-common-580-server (>= 580.178.04)",
        "NVIDIA headless metapackage - no DKMS (open kernel module)", []),
    "fleet-empty-meta": ("1.0", "libc6", "an empty package pulling nothing of a branch", []),
}


STAND_IN = "the archive listed it; http://archive.example/x.deb answered HTTP 404 Not Found"


def admindir(tmp: Path, names: list[str], held: frozenset[str] | set[str] = frozenset(),
             stand_ins: frozenset[str] | set[str] = frozenset()) -> Path:
    d = tmp / "dpkg"
    (d / "info").mkdir(parents=True)
    (d / "updates").mkdir()
    stanzas = []
    for name in names:
        version, deps, desc, files = NOBLE[name]
        want = "hold" if name in held else "install"
        lines = [f"Package: {name}", f"Status: {want} ok installed", "Priority: optional",
                 "Architecture: amd64", f"Version: {version}"]
        if deps:
            lines.append(f"Depends: {deps}")
        if name in stand_ins:  # fleet.repo.standin's marker; a stand-in holds no files
            lines.append(f"X-Fleet-Stand-In: {STAND_IN}")
            files = []
        lines.append(f"Description: {desc}")
        stanzas.append("\n".join(lines))
        listed = [*DOC, f"/usr/share/doc/{name}", f"/usr/share/doc/{name}/copyright", *files]
        (d / "info" / f"{name}.list").write_text("\n".join(listed) + "\n")
    (d / "status").write_text("\n\n".join(stanzas) + "\n")
    return d


def run(adm: Path, branch: str, held: list[str], drivers: list[str],
        sysfs: Path | None = None, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPT), "--branch", branch, "--held", *held,
           "--driver", *drivers, "--admindir", str(adm), *extra]
    if sysfs is not None:
        cmd += ["--sysfs", str(sysfs)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


REAL_580 = ["linux-modules-nvidia-580-server-open-generic",
            "nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server",
            "libnvidia-compute-580-server"]
DRIVERS_580 = ["nvidia-utils-580-server", "libnvidia-compute-580-server"]
DEPS_580 = ["linux-modules-nvidia-580-server-open-6.8.0-151-generic",
            "nvidia-kernel-common-580-server"]


def test_real_branch_passes(tmp_path: Path) -> None:
    adm = admindir(tmp_path, REAL_580 + DEPS_580, held=set(REAL_580))
    proc = run(adm, "580", REAL_580, DRIVERS_580)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("changed=no comment='4 held packages")


def test_held_570_transitionals_fail_naming_each(tmp_path: Path) -> None:
    held = ["linux-modules-nvidia-570-server-open-generic", "nvidia-utils-570-server",
            "libnvidia-compute-570-server"]
    adm = admindir(tmp_path, held + REAL_580 + DEPS_580, held=set(held))
    proc = run(adm, "570", held, ["nvidia-utils-570-server"])
    assert proc.returncode == 1
    for name in held:
        assert f"{name} " in proc.stderr and "transitional" in proc.stderr, proc.stderr
    assert "it pulls nvidia-utils-580-server" in proc.stderr


def test_empty_package_of_another_branch_fails(tmp_path: Path) -> None:
    held = ["nvidia-headless-no-dkms-570-server-open"]
    adm = admindir(tmp_path, [*held, "nvidia-headless-no-dkms-580-server-open",
                              "nvidia-kernel-common-580-server"], held=set(held))
    proc = run(adm, "570", held, [])
    assert proc.returncode == 1
    # caught as a rename of the 580 package, even though its description says nothing
    assert "nvidia-headless-no-dkms-570-server-open 570.211.01" in proc.stderr


def test_a_lab_stand_in_passes_named_where_allowed(tmp_path: Path) -> None:
    """The lab (nvidia:lookup:allow_stand_ins): a marked stand-in, empty, passes, and the
    comment names every stand-in."""
    stand_ins = {"nvidia-utils-580-server", "libnvidia-compute-580-server"}
    adm = admindir(tmp_path, REAL_580 + DEPS_580, held=set(REAL_580), stand_ins=stand_ins)
    proc = run(adm, "580", REAL_580, DRIVERS_580, None, "--allow-stand-ins")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith(
        "lab stand-in (not the driver): nvidia-utils-580-server, "
        "libnvidia-compute-580-server'"), proc.stdout


def test_a_stand_in_fails_outside_the_lab(tmp_path: Path) -> None:
    adm = admindir(tmp_path, REAL_580 + DEPS_580, held=set(REAL_580),
                   stand_ins={"nvidia-utils-580-server"})
    proc = run(adm, "580", REAL_580, DRIVERS_580)
    assert proc.returncode == 1
    assert ("nvidia-utils-580-server 580.178.04-0ubuntu0.24.04.1: held, but a lab stand-in, "
            f"not the driver ({STAND_IN}): never outside the lab") in proc.stderr


def test_an_empty_package_without_the_marker_still_fails_in_the_lab(tmp_path: Path) -> None:
    adm = admindir(tmp_path, ["fleet-empty-meta"], held={"fleet-empty-meta"})
    proc = run(adm, "580", ["fleet-empty-meta"], [], None, "--allow-stand-ins")
    assert proc.returncode == 1
    assert "fleet-empty-meta 1.0: held, but empty" in proc.stderr


def test_empty_package_pulling_no_branch_fails(tmp_path: Path) -> None:
    adm = admindir(tmp_path, ["fleet-empty-meta"], held={"fleet-empty-meta"})
    proc = run(adm, "580", ["fleet-empty-meta"], [])
    assert proc.returncode == 1
    assert "fleet-empty-meta 1.0: held, but empty, and it pulls nothing of branch 580" \
        in proc.stderr


def test_driver_of_another_branch_fails(tmp_path: Path) -> None:
    adm = admindir(tmp_path, REAL_580 + DEPS_580, held=set(REAL_580))
    proc = run(adm, "590", [], DRIVERS_580)
    assert proc.returncode == 1
    assert ("nvidia-utils-580-server 580.178.04-0ubuntu0.24.04.1: the installed driver is "
            "not of the pinned branch 590") in proc.stderr


def test_not_installed_fails(tmp_path: Path) -> None:
    adm = admindir(tmp_path, DEPS_580)
    proc = run(adm, "580", ["nvidia-utils-580-server"], ["libnvidia-compute-580-server"])
    assert proc.returncode == 1
    assert "nvidia-utils-580-server: held, but not installed" in proc.stderr
    assert "libnvidia-compute-580-server: the driver package is not installed" in proc.stderr


def test_loaded_module_of_another_branch_fails(tmp_path: Path) -> None:
    adm = admindir(tmp_path, REAL_580 + DEPS_580, held=set(REAL_580))
    sysfs = tmp_path / "sys"
    (sysfs / "module" / "nvidia").mkdir(parents=True)
    (sysfs / "module" / "nvidia" / "version").write_text("570.211.01\n")
    proc = run(adm, "580", REAL_580, DRIVERS_580, sysfs)
    assert proc.returncode == 1
    assert "kernel module nvidia 570.211.01" in proc.stderr
