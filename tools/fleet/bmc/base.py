"""The BMC client interface and its errors (what the reinstall flow relies on)."""

from __future__ import annotations

from typing import Literal, Protocol

PowerState = Literal["on", "off"]


class BmcError(Exception):
    """Any failure talking to a BMC; the message names the BMC and what failed."""


class BmcUnreachableError(BmcError):
    """No answer: connection refused, timeout, DNS or TLS failure."""


class BmcAuthError(BmcError):
    """The BMC rejected the credentials (HTTP 401/403, IPMI session refused)."""


class BmcProtocolError(BmcError):
    """The BMC answered, but not as expected (status, body, missing resource or value)."""


class BmcClient(Protocol):
    """One node's BMC. Every method raises BmcError (or a subclass) on failure."""

    @property
    def name(self) -> str:
        """How messages name this BMC, e.g. ``redfish https://10.0.1.1``."""
        ...

    def power_state(self) -> PowerState: ...

    def set_pxe_once(self) -> None:
        """Boot from the network (UEFI PXE) on the next boot only."""
        ...

    def power_on_or_reset(self) -> str:
        """Power on if off, hard reset if on; returns the action taken (``on``/``reset``)."""
        ...

    def pxe_boot_now(self) -> str:
        """``set_pxe_once`` then ``power_on_or_reset`` with nothing between (IPMI boot flags
        expire about 60 s after they are set); returns the power action taken."""
        ...

    def power_on(self) -> str:
        """Power on (the node must be off); returns the action sent."""
        ...

    def power_off(self) -> str:
        """Power off at once (no OS shutdown); returns the action sent."""
        ...

    def reset(self) -> str:
        """Hard reset of a node that is on; returns the action sent."""
        ...

    def power_cycle(self) -> str:
        """Off, then on again (a node that is off is only powered on); returns the action
        sent."""
        ...
