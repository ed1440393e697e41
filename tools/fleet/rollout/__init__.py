"""``fleet rollout``: a change applied wave by wave through Slurm drains, with a health
gate per node (docs/operations.md, "Rolling out a change")."""
