"""The standby master with real daemons on this host (docs/salt.md, A standby master): two
real salt-masters with one master key and the same accepted minion key (the standby's
copy as provisioning.standby's pull leaves it), and one real salt-minion whose
minion.d/fleet.conf is the site's rendered file for tbox-001 (the failover list, no
failback), pinned to the one master finger. The site's addresses cannot exist here: the
two masters listen on 127.0.0.1 and 127.0.0.2, and a file read after the rendered one
puts those two in the list, in the same order, with the swarm's ports; every other key
is the rendered one.

The active master answers; stopped, the minion moves to the standby by itself and answers
there with no key accepted again; the active master back, the minion stays with the
standby (one master drives it, never both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from support import swarmconf
from support.swarm import Swarm, free_port_pair

NODE = "tbox-001"
ACTIVE, STANDBY = "127.0.0.1", "127.0.0.2"
FAILOVER_TIMEOUT = 240.0  # master_alive_interval (30 s) + the reconnect, on a loaded host


def _answers(sw: Swarm, timeout: float = 8) -> bool:
    """``salt -L tbox-001 test.ping`` on the master of ``sw`` (its own CLI process: one
    in-process client per master would share Salt's module-level state)."""
    proc = subprocess.run(
        [str(sw.bin_dir / "salt"), "-c", str(sw.config_dir), "--out", "json", "--static",
         "-t", str(int(timeout)), "-L", NODE, "test.ping"],
        capture_output=True, text=True, check=False, timeout=timeout + 60)
    try:
        return json.loads(proc.stdout or "{}").get(NODE) is True
    except ValueError:
        return False


def _wait(sw: Swarm, timeout: float) -> float:
    t0 = time.monotonic()
    while not _answers(sw):
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"{NODE} did not answer the master on {sw.host} within "
                                 f"{timeout:g}s")
    return time.monotonic() - t0


@pytest.fixture
def pair() -> Iterator[tuple[Swarm, Swarm]]:
    tmp = Path(tempfile.mkdtemp(prefix="fleet-fo-", dir="/tmp"))
    try:
        conf = swarmconf.render(tmp)
        rendered = yaml.safe_load(conf.minion_conf(NODE))
        assert rendered["master_type"] == "failover" and len(rendered["master"]) == 2, \
            "the site inventory renders no standby master"
        ports = free_port_pair(ACTIVE)
        keys = tmp / "keys"
        bin_dir = Path(swarmconf.ROOT / ".venv" / "bin")
        a = Swarm(root=tmp / "a", ids=[NODE], master_conf=conf.master_conf,
                  minion_conf=conf.minion_conf, bin_dir=bin_dir, key_store=keys,
                  host=ACTIVE, ports=ports)
        b = Swarm(root=tmp / "b", ids=[NODE], master_conf=conf.master_conf,
                  minion_conf=conf.minion_conf, bin_dir=bin_dir, key_store=keys,
                  host=STANDBY, ports=ports)
        a.write()
        b.write()  # its pki/minions/tbox-001: the accepted key, as the pull copies it
        try:
            yield a, b
        finally:
            a.stop()
            b.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_minion_fails_over_to_the_standby_and_stays(pair: tuple[Swarm, Swarm]) -> None:
    import salt.utils.crypt

    a, b = pair
    a.start_master()  # makes the master key
    for name in ("master.pem", "master.pub"):  # the one key, as the standby holds it
        shutil.copy2(a.master_dir / "pki" / name, b.master_dir / "pki" / name)
    b.start_master()
    finger = salt.utils.crypt.pem_finger(str(a.master_dir / "pki" / "master.pub"),
                                         sum_type="sha256")
    # the rendered file with the site's two addresses replaced by this host's two, in
    # the same order (Salt appends a list of a later file to the earlier one's: an extra
    # file would keep the site's addresses, which must see no traffic from here); then
    # this host's ports and the one finger
    etc = a.minion_dir(NODE) / "etc" / "minion.d"
    text = (etc / "fleet.conf").read_text()
    first, second = yaml.safe_load(text)["master"]
    site = f"master:\n  - {first}\n  - {second}\n"
    assert site in text
    (etc / "fleet.conf").write_text(text.replace(
        site, f"master:\n  - {ACTIVE}\n  - {STANDBY}\n"))
    (etc / "zz-swarm.conf").write_text(yaml.safe_dump(
        {"master_port": a.ports[1], "publish_port": a.ports[0], "master_finger": finger}))
    assert yaml.safe_load((etc / "fleet.conf").read_text())["master"] == [ACTIVE, STANDBY]
    a.start_minions()
    _wait(a, 180)
    assert not _answers(b, timeout=5), "the minion answers both masters"

    t0 = time.monotonic()
    a.stop_master()
    stopped = time.monotonic() - t0
    moved = stopped + _wait(b, FAILOVER_TIMEOUT)
    print(f"failover: {NODE} answered the standby {moved:.1f}s after the active master "
          f"was told to stop ({stopped:.1f}s to stop)")
    pending = list((b.master_dir / "pki" / "minions_pre").iterdir())
    assert not pending, f"a key waits to be accepted again: {pending}"

    a.start_master()
    time.sleep(20)  # longer than a reconnect: a failback would have happened
    assert _answers(b), "the minion left the standby"
    assert not _answers(a, timeout=5), "the minion went back to the old master"
