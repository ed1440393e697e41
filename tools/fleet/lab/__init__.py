"""The lab: the real inventory (through lab/overlay.yaml) as systemd containers converged
by a Salt master on this host. See docs/lab.md."""
