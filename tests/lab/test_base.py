"""base and network on every node: holds, time sync, hosts table, limits, minion config."""

from __future__ import annotations

import pytest
import yaml
from labtools import Lab, node_ids, poll, sh


@pytest.mark.parametrize("node", node_ids())
def test_kernel_held(lab: Lab, node: str) -> None:
    held = set(lab.host(node).check_output("apt-mark showhold").split())
    kernel = lab.lab_pillar["base"]["lookup"]["kernel_packages"]
    assert set(kernel) <= held, f"not held on {node}: {set(kernel) - held}"


@pytest.mark.parametrize("node", node_ids("slurm.compute") + node_ids("slurm.controller"))
def test_slurm_held(lab: Lab, node: str) -> None:
    held = set(lab.host(node).check_output("apt-mark showhold").split())
    assert "slurm-client" in held
    daemon = "slurmctld" if node in node_ids("slurm.controller") else "slurmd"
    assert daemon in held


@pytest.mark.parametrize("node", node_ids())
def test_hostname_and_hosts_table(lab: Lab, node: str) -> None:
    host = lab.host(node)
    assert host.check_output("hostname") == node
    for other in lab.nodes:
        got = host.check_output("getent hosts %s", other.hostname).split()
        assert got[0] == str(other.address), f"{node} resolves {other.hostname} to {got}"
    entries = {(h["address"], name) for h in lab.pillar("hosts")["hosts"] for name in h["names"]}
    text = host.file("/etc/hosts").content_string
    for address, name in entries:
        assert any(line.split()[:1] == [address] and name in line.split()[1:]
                   for line in text.splitlines()), f"/etc/hosts on {node} lacks {address} {name}"


@pytest.mark.parametrize("node", node_ids())
def test_time_sync(lab: Lab, node: str) -> None:
    host = lab.host(node)
    assert host.service("chrony").is_running
    assert host.service("chrony").is_enabled
    conf = host.file("/etc/chrony/chrony.conf").content_string
    for server in lab.pillar("site")["site"]["ntp_servers"]:
        assert server in conf
    # in a container chronyd must not try to set the host's clock
    assert " -x" in host.check_output("ps -o args= -C chronyd")
    tz = lab.pillar("site")["site"]["timezone"]
    assert host.run("readlink -f /etc/localtime").stdout.strip().endswith("/" + tz)


@pytest.mark.parametrize("node", node_ids())
def test_limits(lab: Lab, node: str) -> None:
    text = lab.host(node).file("/etc/security/limits.d/60-fleet.conf").content_string
    rows = {tuple(line.split()) for line in text.splitlines()
            if line.strip() and not line.startswith("#")}
    assert ("*", "-", "memlock", "unlimited") in rows
    assert ("*", "-", "nofile", "1048576") in rows


@pytest.mark.parametrize("node", node_ids())
def test_minion_config(lab: Lab, node: str) -> None:
    host = lab.host(node)
    conf = yaml.safe_load(host.file("/etc/salt/minion.d/fleet.conf").content_string)
    assert conf["id"] == node
    # the overlay's site.salt.master_address (the host, the lab network's gateway), as
    # the rendered pillar carries it
    assert conf["master"] == lab.pillar("site")["site"]["salt"]["master_address"] == \
        str(lab.plan.gateway)
    # pinned: `fleet lab up` records site.salt.master_finger from the lab master's own
    # public key (as `fleet keys finger` prints it), and every minion pins that
    from fleet.master.keys import master_finger

    real = master_finger(lab.paths.master_root / "pki")
    recorded = lab.pillar("site")["site"]["salt"]["master_finger"]
    assert real and recorded == real and conf.get("master_finger") == real
    assert "auto_accept" not in conf and "open_mode" not in conf
    assert host.file("/etc/salt/minion_id").content_string.strip() == node
    assert host.service("salt-minion").is_running
    # the key the master holds for this node is the one the node presents
    accepted = lab.paths.master_root / "pki" / "minions" / node
    assert accepted.read_text().strip() == \
        host.file("/etc/salt/pki/minion/minion.pub").content_string.strip()


@pytest.mark.parametrize("node", node_ids())
def test_minion_answers_after_apply(lab: Lab, node: str) -> None:
    poll(f"test.ping from {node}",
         lambda: lab.salt(node, "test.ping", "-t", "10").get(node) is True, timeout=120)


def test_master_has_no_open_door(lab: Lab) -> None:
    conf = yaml.safe_load((lab.paths.salt_etc / "master").read_text())
    assert conf["auto_accept"] is False
    assert conf["open_mode"] is False
    pending = list((lab.paths.master_root / "pki" / "minions_pre").glob("*")) \
        if (lab.paths.master_root / "pki" / "minions_pre").exists() else []
    assert pending == []


@pytest.mark.parametrize("node", node_ids())
def test_sshd_running(lab: Lab, node: str) -> None:
    host = lab.host(node)
    # base.admins keeps the OS's unit running (ssh.socket on Ubuntu 24.04, ssh on Debian)
    units = sh(host, "systemctl is-active ssh.socket ssh; true").stdout.split()
    assert "active" in units, f"neither ssh.socket nor ssh is active on {node}: {units}"
    listening = sh(host, "ss -Htln 'sport = :22'").stdout
    assert listening.strip(), f"nothing listens on port 22 on {node}"
