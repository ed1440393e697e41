"""Cabling as found against cabling as inventoried: LLDP neighbours (``lldpcli -f json
show neighbors`` on each node, :mod:`fleet.cabling.lldp`, asked through Salt by
:mod:`fleet.cabling.gather`) compared with each NIC's switch and port
(:mod:`fleet.cabling.compare`), reported by :mod:`fleet.cabling.report` for ``fleet
cabling`` (:mod:`fleet.cabling.cli`) and the fleet page. The nodes run lldpd through the
``lldp`` role, whose pillar :mod:`fleet.cabling.role` derives."""
