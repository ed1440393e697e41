# base: every node. Apt sources and holds, time, identity, admins, kernel tuning,
# journald, the salt-minion's own configuration and the burn-in checks' tools.
include:
  - .apt
  - .time
  - .identity
  - .admins
  - .tuning
  - .journald
  - .minion
  - .burnin
