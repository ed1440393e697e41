"""Cabling as found against cabling as inventoried: LLDP neighbours (``lldpcli -f json
show neighbors`` on each node, :mod:`fleet.cabling.lldp`) compared with each NIC's switch
and port (:mod:`fleet.cabling.compare`). Pure functions; no verb runs them yet."""
