#!/usr/bin/env python3
"""Rewrite tests/salt/snapshots/<role>.json from the current salt/ and pillar/.

Run after a deliberate change to the states or the inventory, then review `git diff`:
    PYTHONPATH=tools python tests/salt/update_snapshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: support.harness (snapshot is next to this script)

import snapshot  # noqa: E402

from support import harness  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        renderer, _key = harness.make_renderer(Path(tmp))
        roles = harness.roles_of(renderer)
        out = harness.SNAPSHOTS
        out.mkdir(exist_ok=True)
        failed = False
        for role in snapshot.ROLES:
            if role not in roles:
                print(f"{role}: no node has this role; snapshot left as it is")
                continue
            result = renderer.render(roles[role][0], harness.DEFAULT_OS)
            if result.errors:
                print("\n".join(result.errors), file=sys.stderr)
                failed = True
                continue
            path = out / f"{role}.json"
            text = snapshot.dumps(snapshot.snapshot(role, result))
            changed = not path.exists() or path.read_text() != text
            path.write_text(text)
            print(f"{path.relative_to(harness.ROOT)}: {'updated' if changed else 'unchanged'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
