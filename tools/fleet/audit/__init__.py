"""The audit log: one record per run of a verb that changes something (:mod:`.record`
says which), appended by :func:`fleet.cli.main` once the run's exit code is known, to an
append-only JSON-lines file on the master (:mod:`.log`) and to the systemd journal with
structured fields where there is one (:mod:`.journal`). A record never holds a value of
the secrets store (:mod:`.redact`). ``fleet log`` reads it (docs/operations.md)."""
