"""The site's Python package cache: a wheelhouse with a PEP 503 "simple" index on the
provisioning host (salt/provisioning/pycache.sls; its nginx serves it at ``/pypi/``), filled
from uv.lock files only, every file checked against the lock's sha256
(docs/operations.md, Python package cache).

A file keeps its upstream URL's host and path under the cache's root, so one rule maps a
lock's URL to the cache (:func:`fleet.pycache.lock.site_path`)::

    https://files.pythonhosted.org/packages/ab/cd/.../attrs-26.1.0-py3-none-any.whl
    -> <root>/files.pythonhosted.org/packages/ab/cd/.../attrs-26.1.0-py3-none-any.whl

and a worker's ``fleet-uv-warm`` (salt/compute/files/fleet-uv-warm.sh) applies that rule to
a job's lock to fill its uv cache from the site before ``uv sync --frozen --offline``."""
