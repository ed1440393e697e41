"""The standby master as the states render it (docs/salt.md, A standby master): every
minion's failover list, the standby's key pull (its own ssh key, made on it, in a 0700
directory; the private master key keeps its mode; a different master key refused), and the
active master's authorization of that key: from the standby's address only, a read-only
rsync of the pki directory only. The site inventory records no sync_key yet: the
keysource case renders a copy of pillar/ with one."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from support import harness

SYNC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEyDceWfXu3BQy79KBbHKDGK3NaKXWu0LID7p3IMhgry"


def _renderer(tmp: Path, pillar: Path | None = None) -> Any:
    saltrender = harness.highstates.saltrender()
    secrets = tmp / "secrets-pillar"
    harness.write_secrets_root(secrets)
    saltrender.quiet_salt_logging()
    return saltrender.Renderer(harness.ROOT / "salt", pillar or harness.ROOT / "pillar",
                               secrets, tmp / "cache")


def _render(renderer: Any, node: str) -> Any:
    res = renderer.render(node)
    assert not res.errors, res.errors
    return res


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _renderer(tmp_path_factory.mktemp("standby"))


def _ids(res: Any) -> dict[str, dict[str, Any]]:
    return {c["__id__"]: c for c in res.lowstate}


def test_every_minion_has_the_failover_list(site: Any) -> None:
    standby = site.pillar("head-01")["site"]["salt"]["standby"]
    for node in ("tbox-001", "head-01", "head-02", "stor-001"):
        conf = yaml.safe_load(_render(site, node).managed("base-minion-file-managed-conf")[1])
        assert conf["master"] == [standby["master_address"], standby["address"]], node
        assert conf["master_type"] == "failover" and conf["master_failback"] is False
        assert conf["master_alive_interval"] == 30  # site.salt.standby.alive_interval_s
        assert conf["retry_dns"] == 0 and conf["master_tries"] == -1


def test_the_standby_pulls_with_its_own_key(site: Any, tmp_path: Path) -> None:
    res = _render(site, "head-02")
    ids = _ids(res)
    keygen = ids["provisioning-standby-cmd-run-keygen"]
    assert keygen["creates"].endswith("/sync_ed25519") and "-N ''" in keygen["name"]
    assert ids["provisioning-standby-file-directory-keys"]["mode"] == "0700"
    # the standby is a master too: provisioning.master on its own address
    conf = yaml.safe_load(res.files["provisioning-master-file-managed-conf"])
    assert conf["interface"] == "10.1.0.11" and conf["auto_accept"] is False
    script = res.files["provisioning-standby-file-managed-script"]
    assert "master='10.1.0.10'" in script and "recorded=''" in script
    assert ids["provisioning-standby-file-managed-script"]["mode"] == "0750"
    path = tmp_path / "sync"
    path.write_text(script)
    assert subprocess.run(["sh", "-n", str(path)], check=False).returncode == 0
    assert "provisioning.keysource" not in site.pillar("head-02")["node"]["roles"]


def _fake_bin(tmp: Path, rsync_body: str) -> Path:
    """A FAKE ssh side: an rsync stand-in that copies a local 'remote' pki (nothing can
    be reached from here); the script's own logic (the key check, the refusal of a
    different master key, the swap) runs for real."""
    bindir = tmp / "bin"
    bindir.mkdir()
    fake = bindir / "rsync"
    fake.write_text(f"#!/bin/sh\n{rsync_body}\n")
    fake.chmod(0o755)
    return bindir


def _script(site: Any, tmp: Path, key: str | None) -> tuple[Path, Path, Path]:
    """The rendered sync script with its paths moved under tmp."""
    text = _render(site, "head-02").files["provisioning-standby-file-managed-script"]
    kdir, pki = tmp / "standby", tmp / "pki"
    kdir.mkdir()
    (kdir / "sync_ed25519.pub").write_text(SYNC_KEY + " fleet-standby-sync\n")
    text = text.replace("dir='/etc/salt/pki/standby'", f"dir='{kdir}'")
    text = text.replace("pki='/etc/salt/pki/master'", f"pki='{pki}'")
    text = re.sub(r"recorded='[^']*'", f"recorded='{key or ''}'", text)
    script = tmp / "fleet-standby-sync"
    script.write_text(text)
    return script, kdir, pki


def _run(script: Path, bindir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(script)], capture_output=True, text=True, check=False,
                          env={"PATH": f"{bindir}:/usr/bin:/bin"})


def test_the_pull_refuses_an_unrecorded_key_and_a_different_master_key(
        site: Any, tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    (remote / "minions").mkdir(parents=True)
    (remote / "master.pem").write_text("PRIVATE")
    (remote / "master.pem").chmod(0o400)
    (remote / "master.pub").write_text("PUBLIC-A")
    (remote / "minions" / "tbox-001").write_text("K1")
    # the stand-in takes the last two words (source, destination) and copies the remote
    bindir = _fake_bin(tmp_path, 'for a; do src=$dst; dst=$a; done; '
                       f'case "$src" in root@*) src="{remote}/";; esac; '
                       'mkdir -p "$dst" && cp -a "$src". "$dst"')
    script, _kdir, pki = _script(site, tmp_path, None)
    r = _run(script, bindir)
    assert r.returncode == 1 and "site.salt.standby.sync_key" in r.stderr
    assert not pki.exists()

    script.unlink()
    shutil.rmtree(tmp_path / "standby")
    script, _kdir, pki = _script(site, tmp_path, SYNC_KEY)
    r = _run(script, bindir)
    assert r.returncode == 0, r.stderr
    assert (pki / "minions" / "tbox-001").read_text() == "K1"
    assert (pki / "master.pem").read_text() == "PRIVATE"
    assert (pki / "master.pem").stat().st_mode & 0o777 == 0o400  # its mode travels

    (remote / "master.pub").write_text("PUBLIC-B")  # a master with another key
    r = _run(script, bindir)
    assert r.returncode == 1 and "differs" in r.stderr
    assert (pki / "master.pub").read_text() == "PUBLIC-A"


def test_the_active_master_authorizes_the_recorded_key_for_a_read_only_pull(
        tmp_path: Path) -> None:
    pillar = tmp_path / "pillar"
    shutil.copytree(harness.ROOT / "pillar", pillar)
    site_sls = pillar / "site.sls"
    text = site_sls.read_text()
    assert "sync_key: null" in text
    site_sls.write_text(text.replace("sync_key: null", f"sync_key: {SYNC_KEY}"))
    renderer = _renderer(tmp_path, pillar)
    ids = _ids(_render(renderer, "head-01"))
    auth = ids["provisioning-keysource-ssh_auth-present"]
    assert auth["user"] == "root" and auth["enc"] == "ssh-ed25519"
    assert auth["name"] == SYNC_KEY.split()[1]
    assert auth["options"] == ["restrict", 'from="10.1.0.11"',
                               'command="/usr/bin/rrsync -ro /etc/salt/pki/master"']
    assert ids["provisioning-keysource-service-dead-sync"]["name"] == \
        "fleet-standby-sync.timer"


def test_the_site_without_a_sync_key_authorizes_none(site: Any) -> None:
    ids = _ids(_render(site, "head-01"))
    assert "provisioning-keysource-ssh_auth-present" not in ids
    assert "provisioning-keysource-service-dead-sync" in ids
