"""Day zero: what an uninventoried machine reports from the commissioning environment
(report.py, the schema; leases.py, who may send it; store.py, kept per MAC), matched to a
planned node (match.py) and written into inventory.yaml (accept.py)."""
