"""`fleet reinstall` in the lab: the real CLI against the lab's Salt master,
Slurm controller and PXE state on head-01, with one FAKE BMC per lab node (sushy-tools'
Redfish emulator, fake driver: tests/bmc/fake_redfish_bmc.py) whose power actions are
acted out on the node's container by FAKE hardware (tests/lab/fake_lab_hardware.py): a
PXE boot that gets the install script recreates the container from the bare image and
runs the node's rendered late-commands, as the installer would.

The BMCs listen on 127.0.0.1 (the inventory's BMC network does not exist here):
`--bmc-address` points the CLI at each node's emulator. These tests run last in the lab
session (conftest.py orders them) and in this order: each leaves the node healthy.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import Lab, podman_exec, poll
from reinstall_rig import CONTROLLER, PXE_STATE, Rig, finish, rig_up, steps

from fleet.lab import highstate
from fleet.lab import podman as pm
from fleet.render import installkey
from support.bmcfakes import free_port

GPU_NODE, BYSTANDER, OTHER_GPU = "tbox-002", "tbox-001", "tbox-039"


@pytest.fixture(scope="module")
def rig(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with rig_up(lab, tmp_path_factory.mktemp("reinstall")) as r:
        yield r


def test_bmc_down_fails_preflight_and_leaves_the_node_alone(rig: Rig) -> None:
    """No BMC at the address: refused before anything changes (not drained, key kept)."""
    pki = rig.lab.paths.master_root / "pki" / "minions" / OTHER_GPU
    key_before = pki.read_text()
    rc, report = rig.run(OTHER_GPU, "--timeout", "60", bmc_port=free_port(), timeout=300)
    assert rc == 5, rig.stderr(OTHER_GPU)
    assert report["outcome"] == "failed" and report["message"].startswith("preflight failed")
    assert steps(report)["preflight"]["outcome"] == "failed"
    assert "drain" not in steps(report)
    assert rig.slurm_state(OTHER_GPU) == "idle"
    assert rig.boot_mode(OTHER_GPU) == "local"
    assert pki.read_text() == key_before
    finish_entry = rig.journal(OTHER_GPU)[-1]
    assert finish_entry["event"] == "finish" and finish_entry["outcome"] == "failed"
    assert finish_entry["step"] == "preflight"
    # a failed preflight is a finished run: --abort closes it for the next tests
    rc, report = rig.run(OTHER_GPU, "--abort", timeout=120)
    assert rc == 0, rig.stderr(OTHER_GPU)


def test_reinstall_gpu_node_while_a_job_runs_on_another(rig: Rig, lab: Lab) -> None:
    node = lab.plan.inventory.nodes[GPU_NODE]
    container = lab.plan.node(GPU_NODE).container
    accepted = lab.paths.master_root / "pki" / "minions" / GPU_NODE
    old_pub = accepted.read_text()
    old_keys = rig.work / "old-keys"
    old_keys.mkdir()
    for f in ("minion.pem", "minion.pub"):
        subprocess.run(["podman", "--runtime", "runc", "cp",
                        f"{container}:/etc/salt/pki/minion/{f}", str(old_keys / f)], check=True)

    # a job on another node of the same partition keeps running through the reinstall
    rig.head("scancel", "-n", "bystander")
    try:
        _reinstall_with_a_bystander(rig, lab, node, container, accepted, old_pub, old_keys)
    finally:
        rig.head("scancel", "-n", "bystander")


def _reinstall_with_a_bystander(rig: Rig, lab: Lab, node: Any, container: str,
                                accepted: Path, old_pub: str, old_keys: Path) -> None:
    job = rig.head("sbatch", "--parsable", "-p", "tbox1", "-w", BYSTANDER, "-J",
                   "bystander", "--wrap", "sleep 3000")
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip().split(";")[0]

    def job_state() -> str:
        return rig.head("squeue", "-h", "-j", job_id, "-o", "%T").stdout.strip()

    poll("the bystander job to run", lambda: job_state() == "RUNNING", 120)

    # the installer is held before its late-commands (its key fetch) until the hostile
    # neighbour's tries below are done: a lab install can take 5 s, less than they do
    release = rig.work / f"{GPU_NODE}.release"
    release.unlink(missing_ok=True)
    rig.mode(GPU_NODE, "hold")
    proc = rig.start(GPU_NODE, "--timeout", "900")
    token_path = installkey.token_path(lab.plan.inventory, node)

    def armed_token() -> str:
        assert proc.poll() is None, rig.stderr(GPU_NODE)
        return rig.head("cat", token_path).stdout.strip()

    token = poll("the install token to be published on head-01", armed_token, 300)
    endpoint = installkey.endpoint(lab.plan.inventory)
    head_addr = lab.plan.inventory.nodes[CONTROLLER].address
    try:
        _hostile_neighbour_is_refused(rig, lab, node, token, endpoint, head_addr)
    finally:
        rig.mode(GPU_NODE, "normal")  # read at the install's start: for the next runs
        release.write_text("go\n")

    def installed() -> bool:
        assert proc.poll() is None, rig.stderr(GPU_NODE)
        return any(e["event"] == "step" and e["step"] == "wait_install" and
                   e["phase"] == "end" for e in rig.journal(GPU_NODE))

    poll("the installer's callback", installed, 900, interval=2)
    # the spent token is refused: no second key, no second callback
    assert rig.curl_from(BYSTANDER, "-H", f"Authorization: Bearer {token}",
                         f"{endpoint}/v1/key/{GPU_NODE}") == "403"
    assert rig.curl_from(BYSTANDER, "-X", "POST", "-H", f"Authorization: Bearer {token}",
                         "--data-binary", "", f"{endpoint}/v1/done/{GPU_NODE}") == "403"
    rc, report = finish(proc, 2700)
    assert rc == 0, f"{report.get('message')}\n{rig.stderr(GPU_NODE)}"
    assert report["outcome"] == "done"
    done = steps(report)
    # per-step timings of the last lab reinstall (docs/benchmarks.md quotes them)
    (lab.paths.lab / "reinstall-timings.json").write_text(json.dumps(
        {"node": GPU_NODE, "steps": {k: v["seconds"] for k, v in done.items()},
         "install": [e for e in rig.hardware(GPU_NODE) if e["event"] == "install-done"]},
        indent=2))
    assert [s for s in done if done[s]["outcome"] == "failed"] == []
    assert done["drain"]["outcome"] == "ok" and done["resume"]["outcome"] == "ok"

    # drained before the power action: the fake hardware read Slurm when the BMC acted
    hw = rig.hardware(GPU_NODE)
    power = [e for e in hw if e["event"] == "power-boot"]
    assert power and power[0]["slurm_state"].rstrip("*~#!%$@^-+") == "drained", power
    journal = rig.journal(GPU_NODE)
    order = [(e["step"], e["phase"]) for e in journal if e["event"] == "step"]
    assert order.index(("drain", "end")) < order.index(("power_off", "start"))
    # one install, then PXE gave the local script and the node booted its disk
    events = [e["event"] for e in hw]
    assert events.count("install-start") == 1 and "install-loop" not in events, hw
    after = events[events.index("install-done"):]
    pxe_after = [e for e in hw[events.index("install-done"):] if e["event"] == "pxe"]
    assert pxe_after and pxe_after[0]["mode"] == "local" and "booted-disk" in after, hw
    assert rig.boot_mode(GPU_NODE) == "local"
    assert rig.head("test", "-e", token_path).returncode != 0  # token withdrawn

    # the new key: accepted on the master, used by the node; the old one is refused
    new_pub = accepted.read_text()
    assert new_pub != old_pub
    node_pub = podman_exec(lab, GPU_NODE, "cat", "/etc/salt/pki/minion/minion.pub").stdout
    assert node_pub.strip() == new_pub.strip()
    # the installer pinned the master that served the key (master_finger)
    from fleet.master.keys import master_finger

    pinned = podman_exec(lab, GPU_NODE, "cat", "/etc/salt/minion.d/fleet-master-finger.conf")
    finger = master_finger(lab.paths.master_root / "pki")
    assert finger and pinned.stdout.strip() == f"master_finger: '{finger}'"
    assert _old_key_rejected(rig, old_keys), "the master accepted the old key"

    # converged: a second highstate changes nothing
    results, _ = highstate.apply(lab.paths, [GPU_NODE], target=GPU_NODE)
    assert not results[0].status.bad and results[0].changed == 0, \
        (results[0].problems(), results[0].changes)
    # resumed and taking jobs, while the bystander kept running
    assert rig.slurm_state(GPU_NODE) == "idle"
    assert job_state() == "RUNNING"
    ran = rig.head("srun", "--immediate=60", "-p", "tbox1", "-w", GPU_NODE, "hostname",
                   timeout=180)
    assert ran.returncode == 0 and ran.stdout.strip() == GPU_NODE, ran.stderr


def _hostile_neighbour_is_refused(rig: Rig, lab: Lab, node: Any, token: str, endpoint: str,
                                  head_addr: Any) -> None:
    """While GPU_NODE is armed, the neighbour (BYSTANDER, from its own address) tries the
    token over TFTP and HTTP, then the endpoint with the token it stole (read here from
    head-01, as a sniffer would have it) or forged, and an early callback: all refused,
    none of it spends the token."""
    name = installkey.token_name(node)
    state = PXE_STATE
    # published next to the state directory, never in it (TFTP serves that one), 0640
    # root:www-data (nginx reads it; dnsmasq's TFTP, running as dnsmasq, could not)
    assert rig.head("stat", "-c", "%a %U %G", installkey.token_path(lab.plan.inventory, node)
                    ).stdout.split() == ["640", "root", "www-data"]
    listed = rig.head("ls", "-a", state, f"{state}-tokens").stdout
    assert "token." not in listed and listed.count(name) == 1, listed  # no temp file
    tftp_link = podman_exec(lab, BYSTANDER, "curl", "-s", "--max-time", "20",
                            f"tftp://{head_addr}/state/{node.mac.replace(':', '-')}.ipxe")
    assert tftp_link.returncode == 0 and "kernel" in tftp_link.stdout  # TFTP works
    for path in (f"state/{name}", f"state/../pxe-state-tokens/{name}"):
        got = podman_exec(lab, BYSTANDER, "curl", "-s", "--path-as-is", "--max-time", "20",
                          f"tftp://{head_addr}/{path}")
        assert got.returncode != 0 and token not in got.stdout, (path, got)
    # HTTP from its own address: nginx refuses; so does the endpoint, with the real token
    assert rig.curl_from(BYSTANDER, f"http://{head_addr}/state/{name}") == "403"
    for bearer in (token, "forged-token"):
        auth = f"Authorization: Bearer {bearer}"
        assert rig.curl_from(BYSTANDER, "-H", auth, f"{endpoint}/v1/key/{GPU_NODE}") == "403"
        # an early callback (a signature it cannot make; the address is refused first)
        assert rig.curl_from(BYSTANDER, "-X", "POST", "-H", auth, "--data-binary", "x",
                             f"{endpoint}/v1/done/{GPU_NODE}") == "403"
        assert rig.curl_from(BYSTANDER, "-X", "POST", "-H", auth, "--data-binary", "stop",
                             f"{endpoint}/v1/error/{GPU_NODE}") == "403"
    assert rig.curl_from(BYSTANDER, f"{endpoint}/v1/status/{GPU_NODE}") == "403"
    # the neighbour is no armed node: the endpoint's door turned it away before a thread,
    # and journaled nothing (a flood must not reach the disk)
    refused = [e for e in rig.journal(GPU_NODE) if e.get("what") == "token-refused"]
    neighbour = str(lab.plan.inventory.nodes[BYSTANDER].address)
    assert not any(e["peer"].startswith(neighbour) for e in refused), refused
    assert not any(e.get("what") in ("key-fetched", "install-error")
                   for e in rig.journal(GPU_NODE))


# The old OS of the node being reinstalled, as root on it, from its own address: polls
# nginx for its token and, with what it has (a forged token until it sees the real one),
# asks for the key, calls back signed with the only key it holds, and reports an error.
HOSTILE_OLD_OS = r"""
u=$1; ep=$2; n=$3; key=/etc/salt/pki/minion/minion.pem; t=forged-token
while :; do
  if got=$(curl -fsS --max-time 5 "$u" 2>/dev/null); then t=$got; echo "token seen"; fi
  echo "status $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$ep/v1/status/$n")"
  k=$(curl -s -o /tmp/k -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $t" \
      "$ep/v1/key/$n"); echo "key $k"
  [ "$k" = 200 ] && key=/tmp/k
  printf 'fleet-install-done:%s:%s' "$n" "$t" | openssl dgst -sha256 -sign $key \
      > /tmp/sig 2>/dev/null || : > /tmp/sig
  echo "done $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
      -H "Authorization: Bearer $t" --data-binary @/tmp/sig "$ep/v1/done/$n")"
  echo "error $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
      -H "Authorization: Bearer $t" --data-binary stop "$ep/v1/error/$n")"
  sleep 0.2
done
"""

# Another node floods the endpoint with idle connections (64 at a time, never a request)
# until a stop file appears; prints how many it opened and what each got first.
FLOOD = r"""
import json, os, socket, sys, time
host, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
end, seen, opened = time.time() + 1800, {}, 0
while time.time() < end and not os.path.exists(stop):
    held = []
    for _ in range(64):
        try:
            held.append(socket.create_connection((host, port), timeout=5))
            opened += 1
        except OSError as exc:
            seen[type(exc).__name__] = seen.get(type(exc).__name__, 0) + 1
    for s in held:
        try:
            got = s.recv(16).decode(errors="replace")[:12] or "closed"
        except OSError as exc:
            got = type(exc).__name__
        seen[got] = seen.get(got, 0) + 1
        s.close()
    time.sleep(0.2 if held else 1.0)  # no endpoint yet (or any more): wait for it
print(json.dumps({"opened": opened, "answers": seen}), flush=True)
"""


def _in_container(lab: Lab, hostname: str, *argv: str) -> subprocess.Popen[str]:
    """A long-running process in a lab node's container (podman exec), its output here."""
    env = {**os.environ, "CONTAINERS_CONF": str(pm.ensure_conf(lab.paths))}
    return subprocess.Popen(["podman", "--runtime", "runc", "exec",
                             lab.plan.node(hostname).container, *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _installer_got_its_key(rig: Rig, node: str) -> None:
    """The node's last install ran every late-command to the end, its key fetch too."""
    hw = rig.hardware(node)
    last = hw[max(i for i, e in enumerate(hw) if e["event"] == "install-start"):]
    cmds = [e for e in last if e["event"] == "late-command" and not e.get("skipped")]
    assert any("minion key installed" in e["output"] for e in cmds if e["rc"] == 0), cmds
    assert all(e["rc"] == 0 for e in cmds) and any(e["event"] == "install-done"
                                                   for e in last), last[-5:]


def test_a_hostile_old_os_gets_nothing_and_the_reinstall_completes(rig: Rig,
                                                                    lab: Lab) -> None:
    """During `fleet reinstall tbox-002` a process in tbox-002's own container (its old
    OS, root, from the node's own address) polls for its token and tries the key, a
    callback signed with its old key and an error report, over and over (from before the
    run). It gets nothing: the BMC powers the node off (the FAKE hardware cuts the container) and
    reports it off before the token is published, so the process is gone before there
    is a token to see, and all it sent was refused. The reinstall completes, with the
    key the installer fetched."""
    inv = lab.plan.inventory
    node = inv.nodes[GPU_NODE]
    head_addr = inv.nodes[CONTROLLER].address
    url = f"http://{head_addr}/state/{installkey.token_name(node)}"
    old_os = _in_container(lab, GPU_NODE, "sh", "-c", HOSTILE_OLD_OS, "sh", url,
                           installkey.endpoint(inv), GPU_NODE)
    lines: list[str] = []
    ended: list[float] = []

    def read() -> None:
        assert old_os.stdout is not None
        for line in old_os.stdout:
            lines.append(line.strip())
        ended.append(time.time())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        poll("the old OS to ask for the key", lambda: any(
            ln.startswith("error ") for ln in lines), 60)
        rc, report = rig.run(GPU_NODE, "--timeout", "900", timeout=2700)
    finally:
        if old_os.poll() is None:
            old_os.kill()
        reader.join(timeout=30)
    assert rc == 0 and report["outcome"] == "done", \
        f"{report.get('message')}\n{rig.stderr(GPU_NODE)}"
    # the old OS ended with its container, before the token was published
    armed_at = next(e["ts"] for e in rig.journal(GPU_NODE) if e["event"] == "step"
                    and e["step"] == "arm_install" and e["phase"] == "start"
                    and e["run"] == report["run"])
    assert ended and ended[0] < armed_at, (ended, armed_at, lines[-8:])
    assert "token seen" not in lines
    tries = [ln.split(" ") for ln in lines if ln.split(" ")[0] in ("key", "done", "error")]
    assert {t[0] for t in tries} == {"key", "done", "error"}, lines[-8:]
    # every one refused (000: before the run's endpoint listened), and it was heard
    assert all(t[1] in ("000", "403", "409") for t in tries), lines
    assert any(t[1] == "403" for t in tries), lines
    began = next(e["ts"] for e in rig.journal(GPU_NODE) if e["event"] == "run"
                 and e["run"] == report["run"] and e["mode"] == "new")
    assert not any(e.get("what") in ("key-fetched", "install-finished", "install-error")
                   and began <= e["ts"] < armed_at for e in rig.journal(GPU_NODE))
    # the installer got the key; the node's minion uses it
    _installer_got_its_key(rig, GPU_NODE)
    accepted = (lab.paths.master_root / "pki" / "minions" / GPU_NODE).read_text()
    node_pub = podman_exec(lab, GPU_NODE, "cat", "/etc/salt/pki/minion/minion.pub").stdout
    assert node_pub.strip() == accepted.strip()


def test_a_flood_from_another_node_does_not_keep_the_installer_from_its_key(
        rig: Rig, lab: Lab) -> None:
    """While tbox-002 is reinstalled, tbox-001 floods the endpoint with idle connections,
    64 at a time (the endpoint used to serve 32 at once, and closed the rest unanswered:
    the installer read that as "no reinstall" and exited 0 without its key). Each gets
    the door's 403 at once; the installer gets its key, and the reinstall completes."""
    inv = lab.plan.inventory
    host, port = installkey.endpoint(inv).removeprefix("http://").rsplit(":", 1)
    stop = "/tmp/fleet-stop-flood"
    podman_exec(lab, BYSTANDER, "rm", "-f", stop)
    flood = _in_container(lab, BYSTANDER, "python3", "-c", FLOOD, host, port, stop)
    try:
        rc, report = rig.run(GPU_NODE, "--timeout", "900", timeout=2700)
    finally:
        podman_exec(lab, BYSTANDER, "touch", stop)
        try:
            out, _ = flood.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            flood.kill()
            out, _ = flood.communicate()
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["opened"] > 10 * 64, summary  # it flooded the whole time
    answers = summary["answers"]
    assert answers.get("HTTP/1.1 403", 0) > 10 * 64 and "HTTP/1.1 200" not in answers, \
        answers
    assert rc == 0 and report["outcome"] == "done", \
        f"{report.get('message')}\n{rig.stderr(GPU_NODE)}"
    _installer_got_its_key(rig, GPU_NODE)


def _netns(lab: Lab, hostname: str, *argv: str) -> str:
    """A command in a lab node's network namespace, from the host (as the hostile
    neighbour's root, or the "cable" of the node, would act); its output."""
    pid = str(pm.inspect(lab.paths, lab.plan.node(hostname).container)["State"]["Pid"])
    return subprocess.run(["nsenter", "-t", pid, "-n", *argv], check=True,
                          capture_output=True, text=True, timeout=30).stdout


def test_a_neighbour_that_wins_the_race_stops_the_reinstall(rig: Rig, lab: Lab) -> None:
    """The second run lets the neighbour win: while OTHER_GPU's installer is held before
    its late-commands, its NIC goes down and the neighbour (BYSTANDER) takes its address,
    fetches the published token from nginx and the key from the endpoint. The real
    installer then fails loudly and reports it; the reinstall stops naming the claimant
    (the address and the neighbour's MAC), the key is revoked on the master, the node
    stays drained and boots locally."""
    inv = lab.plan.inventory
    node = inv.nodes[OTHER_GPU]
    addr = str(node.address)
    thief_mac = lab.plan.node(BYSTANDER).mac
    head_addr = inv.nodes[CONTROLLER].address
    endpoint = installkey.endpoint(inv)
    release = rig.work / f"{OTHER_GPU}.release"
    release.unlink(missing_ok=True)
    rig.mode(OTHER_GPU, "hold")
    proc = rig.start(OTHER_GPU, "--timeout", "600")

    def flush() -> None:
        subprocess.run(["ip", "neigh", "flush", "to", addr], check=False, timeout=30)
        _netns(lab, CONTROLLER, "ip", "neigh", "flush", "to", addr)

    stolen = ""
    default: list[str] = []
    try:
        poll("the installer to be held before its late-commands",
             lambda: proc.poll() is None and any(
                 e["event"] == "install-held" for e in rig.hardware(OTHER_GPU)), 300,
             interval=1)
        default = _netns(lab, OTHER_GPU, "ip", "route", "show", "default").split()
        _netns(lab, OTHER_GPU, "ip", "link", "set", "prov", "down")
        _netns(lab, BYSTANDER, "ip", "addr", "add", f"{addr}/32", "dev", "prov")
        flush()
        got = podman_exec(lab, BYSTANDER, "curl", "-fsS", "--max-time", "20", "--interface",
                          addr, f"http://{head_addr}/state/{installkey.token_name(node)}")
        assert got.returncode == 0, got.stderr
        stolen = got.stdout.strip()
        key = podman_exec(lab, BYSTANDER, "curl", "-s", "-o", "/dev/null", "-w",
                          "%{http_code}", "--max-time", "20", "--interface", addr, "-H",
                          f"Authorization: Bearer {stolen}", f"{endpoint}/v1/key/{OTHER_GPU}")
        assert key.stdout == "200", key  # the neighbour won: it has the key
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            _netns(lab, BYSTANDER, "ip", "addr", "del", f"{addr}/32", "dev", "prov")
        _netns(lab, OTHER_GPU, "ip", "link", "set", "prov", "up")
        if default:  # the link's down dropped it
            _netns(lab, OTHER_GPU, "ip", "route", "replace", *default)
        flush()
        rig.mode(OTHER_GPU, "normal")
        release.write_text("go\n")
    rc, report = finish(proc, 900)
    assert rc == 5, rig.stderr(OTHER_GPU)
    failed = steps(report)["wait_install"]
    assert failed["outcome"] == "failed", report
    assert f"fetched by {addr} (MAC {thief_mac})" in failed["detail"], failed
    assert "the key is revoked" in failed["detail"]
    error = [e for e in rig.journal(OTHER_GPU) if e.get("what") == "install-error"]
    assert len(error) == 1 and error[0]["claimant"] == f"{addr} (MAC {thief_mac})", error
    assert any(e.get("what") == "key-revoked" for e in rig.journal(OTHER_GPU))
    # the real installer failed loudly at its key fetch, never exit 0
    # (the run ended during that late-command: its report is what stopped it)
    poll("the fake installer to stop", lambda: any(
        e["event"] == "install-failed" for e in rig.hardware(OTHER_GPU)), 120)
    hw = rig.hardware(OTHER_GPU)
    assert any(e.get("rc") == 1 and "refused the key" in e.get("output", "")
               and "already used for key fetched by" in e.get("output", "")
               for e in hw if e["event"] == "late-command"), hw[-5:]
    assert not any(e["event"] == "install-done" for e in hw[-10:])
    assert not (rig.lab.paths.master_root / "pki" / "minions" / OTHER_GPU).exists()
    assert rig.boot_mode(OTHER_GPU) == "local"
    assert rig.slurm_state(OTHER_GPU).startswith("drain")
    assert report["left"]["boot_mode"].startswith("local")
    assert report["left"]["slurm"].startswith("drained")
    rc, report = rig.run(OTHER_GPU, "--abort", timeout=120)
    assert rc == 0, rig.stderr(OTHER_GPU)


def _old_key_rejected(rig: Rig, old_keys: Path) -> bool:
    """Authenticate to the lab master with the node's old key pair (salt-call)."""
    conf = rig.work / "old-minion"
    (conf / "pki").mkdir(parents=True)
    for f in ("minion.pem", "minion.pub"):
        shutil.copy(old_keys / f, conf / "pki" / f)
    (conf / "minion").write_text(
        f"id: {GPU_NODE}\nmaster: {rig.lab.plan.gateway}\npki_dir: {conf / 'pki'}\n"
        f"cachedir: {conf / 'cache'}\nsock_dir: {conf / 'sock'}\n"
        f"log_file: {conf / 'log'}\nuser: root\nauth_tries: 1\nauth_timeout: 20\n")
    res = subprocess.run([str(rig.lab.paths.venv_bin / "salt-call"), "-c", str(conf),
                          "test.ping"], capture_output=True, text=True, timeout=180,
                         check=False)
    out = res.stdout + res.stderr
    return res.returncode != 0 and "rejected" in out.lower()


def test_install_that_never_calls_back_times_out(rig: Rig) -> None:
    rig.mode(OTHER_GPU, "hang")
    rc, report = rig.run(OTHER_GPU, "--timeout", "60", timeout=600)
    assert rc == 5, rig.stderr(OTHER_GPU)
    failed = steps(report)["wait_install"]
    assert failed["outcome"] == "failed" and "no install callback within 60s" in \
        failed["detail"] and "token revoked" in failed["detail"], failed
    assert report["left"]["boot_mode"].startswith("local")
    assert report["left"]["slurm"].startswith("drained")
    assert rig.boot_mode(OTHER_GPU) == "local"
    assert rig.slurm_state(OTHER_GPU).startswith("drain")
    last = rig.journal(OTHER_GPU)[-1]
    assert last["event"] == "finish" and last["step"] == "wait_install"
    # the timeout revoked the token already; --abort closes the run
    rc, report = rig.run(OTHER_GPU, "--abort", timeout=120)
    assert rc == 0 and report["left"]["token"] == "none outstanding", report


def test_failed_highstate_stays_drained_then_resume_finishes(rig: Rig, lab: Lab) -> None:
    rig.mode(OTHER_GPU, "break-apt")
    rc, report = rig.run(OTHER_GPU, "--timeout", "900", timeout=3000)
    assert rc == 5, rig.stderr(OTHER_GPU)
    assert steps(report)["converge"]["outcome"] == "failed", report
    assert "highstate failed" in steps(report)["converge"]["detail"]
    assert rig.slurm_state(OTHER_GPU).startswith("drain")
    assert rig.boot_mode(OTHER_GPU) == "local"
    last = rig.journal(OTHER_GPU)[-1]
    assert last["event"] == "finish" and last["step"] == "converge"
    # the operator fixes the cause, then resumes: converge, health, resume
    podman_exec(lab, OTHER_GPU, "rm", "-f", "/etc/apt/apt.conf.d/00fleet-lab-broken")
    rig.mode(OTHER_GPU, "normal")
    rc, report = rig.run(OTHER_GPU, "--resume", timeout=3000)
    assert rc == 0, f"{report.get('message')}\n{rig.stderr(OTHER_GPU)}"
    assert report["mode"] == "resume" and report["outcome"] == "done"
    assert list(steps(report)) == ["converge", "health", "resume"]
    assert rig.slurm_state(OTHER_GPU) == "idle"
