"""The site's package repository: every package the site pins or holds, kept on the
provisioning host in a signed apt repository (reprepro), so a node reinstalled after the
archive dropped a pinned version still installs the same bits (docs/repo.md).

- :mod:`wanted`   which packages: the held and pinned ones and what is locked to them;
- :mod:`fetch`    their files, each checked against the sha256 of the archive's signed index;
- :mod:`standin`  the lab's named stand-in for a hardware-only package the archive lists
                  but does not serve;
- :mod:`signing`  the repository's signing key, in the secrets store;
- :mod:`reprepro` the repository itself;
- :mod:`fill`     the steps together (``fleet repo fill``, ``fleet lab up``).
"""
