"""``fleet reinstall NODE``: drain, rotate the minion key, arm a one-shot PXE install, power
cycle through the BMC, wait for the installer's callback, converge, check, resume.

One module per job: ``tokens`` (one-time install tokens), ``server`` (the key/callback
endpoint), ``bootmode`` (the PXE boot-mode interface), ``steps`` and ``flow`` (the run),
``bootguard`` (converge's one power cycle of a node silent after its install).
The journal, the lock, the runner, Salt, salt-key and Slurm are fleet.master's.
"""
