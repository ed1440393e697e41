# provisioning (the head node): the Salt master's own configuration, dnsmasq + nginx
# serving the rendered pxe/ tree, the installer ISO with its kernel and initrd, the apt
# cache in front of the archives, the Python package cache (/pypi/), the status collector
# (its service) and the fleet page (its timer; nginx serves it), so the master provisions
# itself with `salt-call --local state.apply`; the master's own safety: the audit log's
# directory and the daily backup's timer.
include:
  - .master
  - .pxe
  - .media
  - .aptcache
  - .pycache
  - .status
  - .page
  - .backup
