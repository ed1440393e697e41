"""``fleet status [TARGET]``: one row per node from every live source (sources.py), joined
and judged (view.py)."""
