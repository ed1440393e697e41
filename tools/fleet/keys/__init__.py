"""The Salt master's minion keys against the inventory (``fleet keys``)."""
