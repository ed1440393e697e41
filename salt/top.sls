# Roles -> states. Roles come from pillar node:roles, which pillar/top.sls assigns by
# minion id only (never by grain), so a minion cannot claim a role it was not given.
# Every role in the inventory must appear here: tests/salt checks that.
base:
  'node:roles:base':
    - match: pillar
    - base
  'node:roles:network':
    - match: pillar
    - network
  'node:roles:nvidia':
    - match: pillar
    - nvidia
  'node:roles:infiniband':
    - match: pillar
    - infiniband
  'node:roles:slurm.controller':
    - match: pillar
    - slurm.controller
  'node:roles:slurm.compute':
    - match: pillar
    - slurm.compute
  'node:roles:mkv.volume':
    - match: pillar
    - mkv.volume
  'node:roles:mkv.master':
    - match: pillar
    - mkv.master
  'node:roles:provisioning':
    - match: pillar
    - provisioning
  # derived from the inventory by fleet.render.monitoring: every node, its GPU nodes,
  # the Slurm controller, site.monitoring.host
  'node:roles:monitoring.node':
    - match: pillar
    - monitoring.node
  'node:roles:monitoring.gpu':
    - match: pillar
    - monitoring.gpu
  'node:roles:monitoring.slurm':
    - match: pillar
    - monitoring.slurm
  'node:roles:monitoring.server':
    - match: pillar
    - monitoring.server
  # derived by fleet.cabling.role: every node
  'node:roles:lldp':
    - match: pillar
    - lldp
  # derived from the inventory's compute section by fleet.inventory.compute: the central
  # Valkey's host, the code sync host, the worker groups' nodes
  'node:roles:compute.valkey':
    - match: pillar
    - compute.valkey
  'node:roles:compute.worker':
    - match: pillar
    - compute.worker
  'node:roles:compute.triton':
    - match: pillar
    - compute.triton
  'node:roles:codesync.server':
    - match: pillar
    - codesync.server
  'node:roles:codesync.client':
    - match: pillar
    - codesync.client
  # derived from site.salt.standby by fleet.inventory.roles: the active master serves its
  # keys, the standby pulls them (docs/salt.md, A standby master)
  'node:roles:provisioning.keysource':
    - match: pillar
    - provisioning.keysource
  'node:roles:provisioning.standby':
    - match: pillar
    - provisioning.standby
  # derived from site.backup (an sftp destination) by fleet.inventory.roles: the master's
  # backup login on the storage server
  'node:roles:backup.target':
    - match: pillar
    - backup.target
