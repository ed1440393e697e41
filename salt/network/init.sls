# network: netplan for the provisioning NIC and IPoIB from the inventory, applied only
# when it changed, and rolled back if the master is unreachable afterwards.
include:
  - .netplan
