# provisioning (the head node): the Salt master's own configuration, and dnsmasq +
# nginx serving the rendered pxe/ tree, so the master provisions itself with
# `salt-call --local state.apply`.
include:
  - .master
  - .pxe
