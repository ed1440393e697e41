"""fleet: declarative provisioning for a self-run GPU datacenter."""

__version__ = "0.1.0"
