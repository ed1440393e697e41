"""fleet.pxe.state and `fleet pxe`: boot-mode links on a rendered tree in a temp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.pxe import state
from fleet.render import render_all

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "small.yaml"


def run_fleet(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    return subprocess.run([sys.executable, "-m", "fleet", *args], env=env, text=True,
                          capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(SMALL)


@pytest.fixture
def pxe_root(tmp_path: Path, inv: Inventory) -> Path:
    for rel, text in render_all(inv).items():
        if rel.startswith("pxe/"):
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return tmp_path / "pxe"


def test_token_is_published_with_install_and_withdrawn_by_local(
        tmp_path: Path, inv: Inventory, pxe_root: Path) -> None:
    sd = tmp_path / "state"
    t = state.target(inv, "gpu-01", pxe_root)
    token = tmp_path / "state-tokens" / "52-54-00-00-00-65.token"
    state.set_mode(sd, t, "install", token="tok-1")
    assert token.read_text() == "tok-1" and state.has_token(sd, t)
    state.set_mode(sd, t, "install")  # a plain `fleet pxe set install` keeps it
    assert token.read_text() == "tok-1"
    assert state.strays(sd, state.targets(inv, pxe_root)) == []
    with pytest.raises(state.StateError, match="only with the install mode"):
        state.set_mode(sd, t, "local", token="tok-2")
    state.set_mode(sd, t, "local")
    assert not token.exists() and not state.has_token(sd, t)
    assert state.get_mode(sd, t) == "local"


def test_default_is_local(tmp_path: Path, inv: Inventory, pxe_root: Path) -> None:
    entries = state.status(tmp_path / "state", state.targets(inv, pxe_root))
    assert [e.mode for e in entries] == ["local"] * len(inv.nodes)
    assert all(e.ipxe is None and e.grub is None and e.consistent for e in entries)


def test_set_points_both_links_at_the_hosts_scripts(tmp_path: Path, inv: Inventory,
                                                    pxe_root: Path) -> None:
    sd = tmp_path / "state"
    t = state.target(inv, "gpu-01", pxe_root)
    state.set_mode(sd, t, "install")
    ipxe, grub = sd / "52-54-00-00-00-65.ipxe", sd / "grub.cfg-52:54:00:00:00:65"
    assert ipxe.readlink() == pxe_root / "http/hosts/gpu-01/install.ipxe"
    assert grub.readlink() == pxe_root / "http/hosts/gpu-01/grub-install.cfg"
    assert "fleet: installing" in ipxe.read_text()
    assert state.get_mode(sd, t) == "install"
    state.set_mode(sd, t, "install")  # idempotent
    state.set_mode(sd, t, "local")
    assert ipxe.readlink() == pxe_root / "http/hosts/gpu-01/local.ipxe"
    assert grub.readlink() == pxe_root / "http/hosts/gpu-01/grub-local.cfg"
    assert state.get_mode(sd, t) == "local"
    assert sorted(p.name for p in sd.iterdir()) == sorted([ipxe.name, grub.name])  # no temp left


def test_switch_affects_only_that_node(tmp_path: Path, inv: Inventory, pxe_root: Path) -> None:
    sd = tmp_path / "state"
    for name in ("gpu-01", "gpu-02", "gpu-03"):
        state.set_mode(sd, state.target(inv, name, pxe_root), "install")
    state.set_mode(sd, state.target(inv, "gpu-02", pxe_root), "local")
    modes = {e.hostname: e.mode for e in state.status(sd, state.targets(inv, pxe_root))}
    assert modes == {"head-01": "local", "gpu-01": "install", "gpu-02": "local",
                     "gpu-03": "install", "gpu-04": "local", "stor-1": "local",
                     "stor-2": "local"}


def test_strays_are_links_of_macs_no_node_has(tmp_path: Path, inv: Inventory,
                                              pxe_root: Path) -> None:
    sd = tmp_path / "state"
    assert state.strays(sd, state.targets(inv, pxe_root)) == []
    state.set_mode(sd, state.target(inv, "gpu-01", pxe_root), "install")
    (sd / "52-54-00-aa-bb-cc.ipxe").symlink_to(pxe_root / "http/hosts/gpu-01/install.ipxe")
    assert state.strays(sd, state.targets(inv, pxe_root)) == ["52-54-00-aa-bb-cc.ipxe"]


def test_target_by_mac_any_spelling(inv: Inventory, pxe_root: Path) -> None:
    assert state.target(inv, "52-54-00-00-00-66", pxe_root).hostname == "gpu-02"
    assert state.target(inv, "52:54:00:00:00:66".upper(), pxe_root).hostname == "gpu-02"
    with pytest.raises(state.StateError, match="no such node"):
        state.target(inv, "52:54:00:ff:ff:ff", pxe_root)


def test_refuses_bad_mode_and_undeployed_tree(tmp_path: Path, inv: Inventory) -> None:
    t = state.target(inv, "gpu-01", tmp_path / "not-deployed")
    with pytest.raises(state.StateError, match="not a boot mode"):
        state.set_mode(tmp_path / "state", t, "reinstall")
    with pytest.raises(state.StateError, match="missing; deploy"):
        state.set_mode(tmp_path / "state", t, "install")
    assert not (tmp_path / "state").exists()


def test_half_switched_node_reports_install(tmp_path: Path, inv: Inventory,
                                            pxe_root: Path) -> None:
    sd = tmp_path / "state"
    t = state.target(inv, "gpu-01", pxe_root)
    state.set_mode(sd, t, "local")
    (sd / t.ipxe_link).unlink()
    (sd / t.ipxe_link).symlink_to(t.script("install", "ipxe"))
    e = state.entry(sd, t)
    assert (e.mode, e.consistent) == ("install", False)


def test_cli_set_and_status(tmp_path: Path, pxe_root: Path) -> None:
    where = ["-i", str(SMALL), "--pxe-state", str(tmp_path / "st"), "--pxe-root", str(pxe_root)]
    r = run_fleet("pxe", "set", "gpu-03", "install", *where)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "gpu-03 (52:54:00:00:00:67): local -> install\n"
    r = run_fleet("pxe", "status", "--json", *where)
    assert r.returncode == 0, r.stderr
    modes = {n["node"]: n["mode"] for n in json.loads(r.stdout)["nodes"]}
    assert modes["gpu-03"] == "install" and modes["gpu-04"] == "local"
    r = run_fleet("pxe", "status", "gpu-03", "gpu-04", *where)
    assert r.stdout.split() == ["gpu-03", "52:54:00:00:00:67", "install",
                                "gpu-04", "52:54:00:00:00:68", "local"]
    assert run_fleet("pxe", "set", "nope", "local", *where).returncode == 2
    assert run_fleet("pxe", "set", "gpu-03", "disk", *where).returncode == 2
    r = run_fleet("pxe", "set", "gpu-03", "local", "-i", str(SMALL), "--pxe-state",
                  str(tmp_path / "st"), "--pxe-root", str(tmp_path / "none"))
    assert r.returncode == 4 and "deploy the rendered pxe/ tree" in r.stderr


def test_the_token_is_never_in_the_tftp_served_state_dir(
        tmp_path: Path, inv: Inventory, pxe_root: Path) -> None:
    """The TFTP root links to the state directory (GRUB without HTTP reads state/ there)
    and TFTP serves anyone: no token, under any name, is ever written there. It goes to
    the sibling tokens directory, 0640 with that directory's group (setgid: nginx's),
    renamed into place from a dot-name that nginx never serves."""
    import grp
    import stat

    sd = tmp_path / "state"
    tokens = tmp_path / "state-tokens"
    tokens.mkdir(mode=0o750)
    group = grp.getgrall()[-1].gr_gid  # any group but root's: as nginx's would be
    os.chown(tokens, 0, group)
    tokens.chmod(0o2750)
    t = state.target(inv, "gpu-01", pxe_root)
    seen: list[str] = []
    real_replace = Path.replace

    def spy(self: Path, target: str | os.PathLike[str]) -> Path:
        seen.append(str(self))
        seen.extend(p.name for p in sd.iterdir())  # what the state dir holds meanwhile
        return real_replace(self, target)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "replace", spy)
        state.set_mode(sd, t, "install", token="tok-secret")
    for path in sd.rglob("*"):
        assert not path.name.endswith(".token") and ".token." not in path.name
        if path.is_file() and not path.is_symlink():
            assert "tok-secret" not in path.read_text()
    assert not any("token" in name for name in seen if "/" not in name)
    assert [p for p in seen if "/" in p and ".token" in p] == \
        [str(tokens / ".52-54-00-00-00-65.token.") + f"{os.getpid()}.tmp"]
    published = tokens / t.token_file
    st = published.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == group
    assert sorted(p.name for p in tokens.iterdir()) == [t.token_file]  # no temp left


def test_reinstall_sets_modes_through_a_command(tmp_path: Path, inv: Inventory,
                                               pxe_root: Path) -> None:
    """`fleet reinstall --pxe-command CMD` (provisioning host != master; the lab): the boot
    mode and the token go through `CMD pxe set ... --token-stdin`, token never in argv."""
    from fleet.pxe.bootmode import BootModeUnavailableError, CommandBootMode

    sd = tmp_path / "state"
    wrapper = tmp_path / "fleet-remote"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "argv.log"}\n'
                       f'PYTHONPATH={ROOT / "tools"} exec {sys.executable} -m fleet "$@" '
                       f'-i {SMALL} --pxe-state {sd} --pxe-root {pxe_root}\n')
    wrapper.chmod(0o755)
    boot = CommandBootMode([str(wrapper)])
    t = state.target(inv, "gpu-01", pxe_root)
    boot.set_mode("gpu-01", "install", token="tok-secret")
    assert state.get_mode(sd, t) == "install"
    assert (state.tokens_dir(sd) / t.token_file).read_text() == "tok-secret"
    boot.set_mode("gpu-01", "local")
    assert state.get_mode(sd, t) == "local" and not state.has_token(sd, t)
    assert "tok-secret" not in (tmp_path / "argv.log").read_text()
    with pytest.raises(BootModeUnavailableError, match="no-such-node"):
        boot.set_mode("no-such-node", "install", token="x")
    res = run_fleet("pxe", "set", "gpu-01", "local", "--token-stdin", "-i", str(SMALL),
                    "--pxe-state", str(sd), "--pxe-root", str(pxe_root))
    assert res.returncode == 2 and "needs mode install" in res.stderr


def test_the_old_state_dir_of_fleet_pxe_is_gone(tmp_path: Path) -> None:
    """One name, one meaning (issue 34): the boot-mode links are --pxe-state in every verb;
    --state-dir is a journal root everywhere, so fleet pxe no longer takes it."""
    r = run_fleet("pxe", "status", "gpu-01", "-i", str(SMALL), "--state-dir", str(tmp_path))
    assert r.returncode == 2 and "unrecognized arguments: --state-dir" in r.stderr
