"""``fleet reinstall NODE``: drain, rotate the minion key, arm a one-shot PXE install, power
cycle through the BMC, wait for the installer's callback, converge, check, resume.

One module per job: ``journal`` (what happened, on disk), ``lock`` (one run per node),
``tokens`` (one-time install tokens), ``server`` (the key/callback endpoint), ``commands``
(the injectable runner for scontrol/salt-key/salt), ``slurm`` and ``saltkeys`` (those
commands), ``bootmode`` (the PXE boot-mode interface), ``steps`` and ``flow`` (the run).
"""
