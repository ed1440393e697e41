"""``fleet health [TARGET]``: the health gate of any set of inventory nodes, one Salt call
per check across all of them (docs/operations.md, "Health")."""
