"""What fleet reads back from the monitoring host (Prometheus's HTTP API)."""
