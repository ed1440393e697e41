"""Operator verbs that read the inventory and the BMCs: ``fleet power``, ``fleet console``,
``fleet node list|show`` and ``fleet ports``."""
