"""The lab's NTP server: the lab overlay's one ``site.ntp_servers`` entry is the lab
network's gateway (this host), so that no node's time traffic leaves the lab. chronyd
(the same daemon as on the nodes) serves this host's clock there: ``-x`` (it never sets
the clock), ``local stratum`` (its reference is this host's clock, which the host keeps),
answering the lab subnet only on the gateway address, no command port and no command
socket (the default, /run/chrony/chronyd.sock, is the host's own chronyd's). With it the
nodes' chronyd synchronise for real, and `fleet health`'s time check can pass in the lab."""

from __future__ import annotations

from fleet.lab.paths import Paths
from fleet.lab.plan import Plan
from fleet.lab.run import LabError, live_pid, run, stop_daemon, wait_for

CONF = """\
# Written by `fleet lab up`: the lab's NTP server on the gateway (tools/fleet/lab/ntp.py).
bindaddress {gateway}
allow {subnet}
local stratum 8
cmdport 0
bindcmdaddress /
pidfile {pidfile}
driftfile {drift}
"""


def pid(paths: Paths) -> int | None:
    return live_pid(paths.lab / "ntp" / "chronyd.pid")


def start(paths: Paths, plan: Plan) -> bool:
    """Start it unless it runs (the gateway address must exist: after the first container
    joined the network); returns True if started."""
    if pid(paths) is not None:
        return False
    d = paths.lab / "ntp"
    d.mkdir(parents=True, exist_ok=True)
    conf = d / "chrony.conf"
    conf.write_text(CONF.format(gateway=plan.gateway, subnet=plan.subnet,
                                pidfile=d / "chronyd.pid", drift=d / "drift"))
    try:
        run(["chronyd", "-x", "-f", conf], timeout=30)
    except LabError as exc:
        raise LabError(f"the lab's NTP server did not start (chrony installed? "
                       f"`make lab-deps`; port 123 on {plan.gateway} free?): {exc}") from exc
    wait_for("the lab's chronyd", lambda: pid(paths) is not None, timeout=30)
    return True


def stop(paths: Paths) -> None:
    stop_daemon("the lab's chronyd", lambda: pid(paths), timeout=30)
