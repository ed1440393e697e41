# infiniband: inbox RDMA stack, IPoIB modules at boot, opensm only where the inventory
# puts a host subnet manager. The IPoIB address itself is in the network role (netplan).
include:
  - .rdma
