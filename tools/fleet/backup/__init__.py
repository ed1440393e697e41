"""fleet backup and fleet restore: what only the master holds (:mod:`.paths`), kept with
restic (:mod:`.restic`: deduplicated, encrypted, integrity-checked), a manifest naming
fleet's version and the inventory's commit (:mod:`.manifest`), and the restore onto a
freshly installed head node (:mod:`.restore`). docs/operations.md, Backup and restore."""
