"""The ground floor of the day-two verbs: everything that talks to the Salt master or keeps
per-node state on it. ``runner`` (the command runner, where the salt tools are, the pki
dir), ``salt`` (the one Salt client), ``highstate`` (the one verdict of a highstate
return), ``keys`` (salt-key and master_finger), ``slurm``, ``journal``, ``lock``, ``layout``
(a node's state directory) and ``statedir`` (the state roots and the Salt config dir with
their defaults). Nothing here imports a verb."""
