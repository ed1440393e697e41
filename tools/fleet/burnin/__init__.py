"""Burn-in, the lifecycle stage between discovery and service (planned -> burn-in ->
active): each node's results per check (results.py), judged against its profile's
baseline, the median of the nodes of the profile that passed (verdict.py)."""
