"""The site package repository in the lab (docs/repo.md): `fleet lab up` filled it on the
host, head-01 serves it at the inventory's site.apt.repo, and every node installed its
pinned and held packages from it, preferred over the archive; a stand-in (where the archive
lists a hardware-only package and does not serve it) is named, and the driver check passes
it only where the lab's pillar allows it."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
from labtools import ROOT, Lab, node_ids

from fleet.inventory.load import load_inventory
from fleet.lab import siterepo
from fleet.render import bootstrap

GPU_NODES = node_ids("nvidia")
PROVISIONING = node_ids("provisioning")[0]


def _repo_url(lab: Lab) -> str:
    inv = load_inventory(lab.paths.inventory, lab.paths.overlays)
    return bootstrap.http_base(inv) + bootstrap.SITE_REPO_HTTP


def _held(host) -> list[str]:  # type: ignore[no-untyped-def]
    return host.check_output("apt-mark showhold").split()


def _policy(host, package: str) -> str:  # type: ignore[no-untyped-def]
    return host.check_output("apt-cache policy %s", package)


def _installed_from(policy: str) -> list[str]:
    """The origins (priority and URI) apt lists for the installed version."""
    lines = policy.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("***"))
    out = []
    for line in lines[start + 1:]:
        # an origin line is indented further than a version line: "       1001 http://..."
        if not re.match(r"^\s{7,}\d+ \S", line):
            break
        out.append(line.strip())
    return out


# the kernel is the installer's (in the lab: the image's debootstrap), only held by
# base.apt: it is not installed from the repository (docs/repo.md, What it holds)
KERNEL = re.compile(r"^linux-(generic|image-generic|headers-generic)$")


@pytest.mark.parametrize("node", GPU_NODES)
def test_every_held_package_comes_from_the_site_repository_at_priority_1001(
        lab: Lab, node: str) -> None:
    host = lab.host(node)
    url = _repo_url(lab)
    held = [p for p in _held(host) if not KERNEL.match(p)]
    assert any(p.startswith("nvidia-utils-") for p in held), held
    assert "slurmd" in held, held
    for package in held:
        origins = _installed_from(_policy(host, package))
        assert any(o.startswith("1001 ") and url in o for o in origins), \
            f"{node}: {package}: the installed version is not the site repository's: {origins}"


def test_the_provisioning_host_reads_its_own_directory(lab: Lab) -> None:
    host = lab.host(PROVISIONING)
    repo = load_inventory(lab.paths.inventory, lab.paths.overlays).raw.site.apt.repo
    sources = host.file(bootstrap.SITE_REPO_SOURCES).content_string
    assert f"URIs: file:{repo}\n" in sources
    assert f"Signed-By: {bootstrap.SITE_REPO_KEYRING}\n" in sources
    held = _held(host)
    assert any(p.startswith("slurm") for p in held), held
    assert any(f"1001 file:{repo} " in o for o in _installed_from(_policy(host, "slurmctld")))


def test_stand_ins_are_named_and_the_driver_check_refuses_them_outside_the_lab(
        lab: Lab) -> None:
    stand_ins = siterepo.stand_ins(lab.paths)
    status = subprocess.run([str(ROOT / ".venv" / "bin" / "fleet"), "lab", "status"],
                            capture_output=True, text=True, timeout=120, check=True,
                            cwd=ROOT).stdout
    for name, why in stand_ins.items():
        assert f"stand-in: {name} ({why})" in status
    if not stand_ins:
        pytest.skip("the archive serves every pinned package today: the lab's repository "
                    "holds no stand-in, so there is none to refuse (the check's refusal is "
                    "tested on dpkg databases in tests/salt/test_nvidia_driver_check.py)")
    node = GPU_NODES[0]
    host = lab.host(node)
    # the check as the state runs it (its command line from the highstate's own render)
    low = lab.salt(node, "state.show_lowstate", timeout=300)[node]
    cmd = next(c["name"] for c in low if c["__id__"] == "nvidia-driver-cmd-run-check")
    argv = shlex.split(cmd)
    assert "--allow-stand-ins" in argv
    ok = host.run(shlex.join(argv))
    assert ok.rc == 0, ok.stderr
    held_stand_ins = [p for p in _held(host) if p in stand_ins]
    assert held_stand_ins
    assert "lab stand-in (not the driver): " in ok.stdout
    for name in held_stand_ins:
        assert name in ok.stdout
    # the same check without the lab's allowance: what any node outside the lab runs
    refused = host.run(shlex.join(a for a in argv if a != "--allow-stand-ins"))
    assert refused.rc == 1
    for name in held_stand_ins:
        assert f"{name} " in refused.stderr and "a lab stand-in" in refused.stderr


def test_a_node_installs_a_pinned_version_the_archive_no_longer_has(lab: Lab) -> None:
    """As if the archive had dropped everything: with only the site repository as a
    source, a GPU node still downloads its pinned slurmd, through head-01's web server,
    checked against the repository's signed index."""
    host = lab.host(GPU_NODES[-1])
    version = host.check_output("dpkg-query -W -f '${Version}' slurmd")
    only = ("-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=/tmp/fleet-only-site "
            "-o Dir::State::Lists=/tmp/fleet-only-site-lists -o Dir::Cache::Archives="
            "/tmp/fleet-only-site-cache")
    host.run_test("rm -rf /tmp/fleet-only-site* && mkdir -p /tmp/fleet-only-site "
                  "/tmp/fleet-only-site-lists/partial /tmp/fleet-only-site-cache/partial && "
                  f"cp {bootstrap.SITE_REPO_SOURCES} /tmp/fleet-only-site/")
    try:
        update = host.run(f"apt-get {only} update")
        assert update.rc == 0 and "Err:" not in update.stdout, update.stdout + update.stderr
        got = host.run(f"apt-get {only} install --reinstall --download-only -y "
                       f"slurmd={version}")
        assert got.rc == 0, got.stdout + got.stderr
        assert f"{_repo_url(lab)} " in got.stdout and "slurmd" in got.stdout, got.stdout
    finally:
        host.run("rm -rf /tmp/fleet-only-site /tmp/fleet-only-site-lists "
                 "/tmp/fleet-only-site-cache")
