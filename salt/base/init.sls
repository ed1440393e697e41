# base: every node. Apt sources and holds, time, identity, admins, kernel tuning,
# journald and the salt-minion's own configuration.
include:
  - .apt
  - .time
  - .identity
  - .admins
  - .tuning
  - .journald
  - .minion
