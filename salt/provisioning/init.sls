# provisioning (the head node): the Salt master's own configuration, dnsmasq + nginx
# serving the rendered pxe/ tree, the installer ISO with its kernel and initrd, and the
# apt cache in front of the archives, so the master provisions itself with
# `salt-call --local state.apply`.
include:
  - .master
  - .pxe
  - .media
  - .aptcache
