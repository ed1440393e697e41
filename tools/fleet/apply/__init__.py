"""``fleet apply [TARGET] [--test] [--batch N]``: the highstate through the master, every
inventory node the target names accounted for (docs/operations.md)."""
