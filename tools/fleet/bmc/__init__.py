"""Out-of-band control of one node through its BMC: power state, one-time PXE boot, reset.

``base`` defines the interface and errors, ``redfish`` and ``ipmi`` implement it, and
``connect`` builds a client from an inventory node and the secrets store.
"""

from fleet.bmc.base import (
    BmcAuthError,
    BmcClient,
    BmcError,
    BmcProtocolError,
    BmcTimeoutError,
    BmcUnreachableError,
    PowerState,
)

__all__ = ["BmcAuthError", "BmcClient", "BmcError", "BmcProtocolError", "BmcTimeoutError",
           "BmcUnreachableError", "PowerState"]
