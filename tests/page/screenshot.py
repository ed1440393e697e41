"""`make page-screenshot`: docs/fleet-page.png, the fleet page of the real inventory with
the FIXTURE status document of the tests (support.page_status: one node in maintenance,
one whose minion does not answer, one with a problem), in real headless Chromium."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # support

from fleet.inventory.load import load_inventory  # noqa: E402
from fleet.page import write  # noqa: E402
from support import chromium  # noqa: E402
from support.cli import ROOT  # noqa: E402
from support.page_status import BAD, DOWN, MAINT, fixture_status  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path, help="the PNG to write (e.g. docs/fleet-page.png)")
    args = ap.parse_args()
    inv = load_inventory(ROOT / "inventory.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        www = Path(tmp) / "www"
        write.write(www, inv, fixture_status(inv, MAINT, DOWN, BAD))
        with chromium.serve(www) as url:
            chromium.screenshot(url + f"index.html#node={DOWN}", args.out.resolve(),
                                Path(tmp) / "profile", size="1600,1500")
    print(f"{args.out}: written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
