"""``fleet page``: the fleet page, one static directory nginx serves on the provisioning
host's management address (salt/provisioning/page.sls):

- ``index.html``, ``page.js``, ``page.css``  the page (no framework; static/)
- ``layout.json``  the racks and every node's inventory facts (``layout.py``, from the
  inventory's rack placement, fleet.inventory.racks)
- ``view.json``    each node's state and status fields, from a ``fleet status --json``
  document (``view.py``; the input contract is ``contract.py``)
- ``status.json``  that document as read

``write.py`` writes them, each file atomically (a temporary file, then a rename), the
view last; the page fetches layout.json and view.json and draws with textContent only.
"""
