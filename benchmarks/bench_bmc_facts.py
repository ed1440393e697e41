"""``make bench-bmc-facts``: one node's hardware facts read over Redfish (fleet.bmc.facts) from
a FAKE BMC: sushy-tools' emulator with the FAKE hardware's parts
(tests/bmc/fake_redfish_parts.py) of a TinyBox (12 DIMMs, 2 drives, 2 NICs); ``--runs``
reads, each its wall time and its requests (counted by the client), and what the collector's
hardware round of the site's nodes would take at ``--parallel`` at once. Results -> the
``## BMC hardware facts`` section of docs/benchmarks.md (``--write``) and JSON
(``--json``). A real BMC answers slower than the emulator on this host: the figures are
the client's own cost and the request count, not a BMC's."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

import report  # noqa: E402
from fleet.bmc.redfish import RedfishClient  # noqa: E402

HEADING = "## BMC hardware facts"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=144, help="the site's BMCs, for the round")
    ap.add_argument("--parallel", type=int, default=8, help="the collector's BMC pool")
    ap.add_argument("--write", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from bmc.test_redfish_facts import _node, _parts
    from fleet.bmc.facts import read
    from support.bmcfakes import PASSWORD, USER, start_fake_redfish

    node = _node()
    with tempfile.TemporaryDirectory() as tmp:
        bmc = start_fake_redfish(Path(tmp), power="On", system=node.hostname,
                                 hardware=_parts(node))
        # its request log goes to a pipe nobody reads in tests (a few requests each); this
        # many would fill it and stall the server: drained here
        threading.Thread(target=lambda: [None for _ in bmc.proc.stdout or []],
                         daemon=True).start()
        try:
            client = _Counting(bmc.url, USER, PASSWORD)
            read(client)  # warm: the system's path found once, as the collector keeps it
            walls, requests = [], []
            for _ in range(args.runs):
                before = client.sent
                t0 = time.perf_counter()
                seen = read(client)
                walls.append(time.perf_counter() - t0)
                requests.append(client.sent - before)
        finally:
            bmc.stop()
    med = statistics.median(walls)
    result = {"runs": args.runs, "median_s": med, "max_s": max(walls),
              "requests": statistics.median(requests), "dimms": seen.dimms,
              "round_s": med * args.nodes / args.parallel, "nodes": args.nodes,
              "parallel": args.parallel}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"read: median {med:.3f} s (max {max(walls):.3f} s), "
              f"{result['requests']:.0f} requests; round of {args.nodes} at "
              f"{args.parallel}: {result['round_s']:.1f} s")
    if args.write:
        lines = [HEADING, "",
                 f"`make bench-bmc-facts` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
                 f" {report.cpu_model()}, {os.cpu_count()} logical CPUs, load "
                 f"{report.load_average()}; fleet at {report.commit()}): one node's facts "
                 "read by fleet.bmc.facts from sushy-tools' emulator with the FAKE hardware "
                 f"parts of a TinyBox ({seen.dimms} DIMMs), {args.runs} reads.", "",
                 "| median | max | requests per read | the round of "
                 f"{args.nodes} BMCs, {args.parallel} at once |",
                 "|---|---|---|---|",
                 f"| {med * 1000:.0f} ms | {max(walls) * 1000:.0f} ms | "
                 f"{result['requests']:.0f} | {result['round_s']:.1f} s |", "",
                 "The emulator answers on this host; a real BMC's answers are slower (tens "
                 "of ms each): the round is the client's cost at best, and the collector "
                 "spreads it over half its 900 s interval.", ""]
        report.replace_section(args.write, HEADING, "\n".join(lines))
    return 0


class _Counting(RedfishClient):
    """The client, counting the requests it sends."""

    sent = 0

    def _request(self, *args: Any, **kwargs: Any) -> Any:
        self.sent += 1
        return super()._request(*args, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
