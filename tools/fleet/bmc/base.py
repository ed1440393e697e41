"""The BMC client interface and its errors (what the reinstall flow relies on).

A BMC is not trusted: whatever it sends is cut to printable text on one line
(:func:`bmc_text`) before it reaches a message, and every :class:`BmcError`'s message is
cleaned the same way once more, so that neither a journal nor a terminal ever gets its
escape sequences or newlines. How long a call may take and how much it may read:
fleet.bmc.limits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal, Protocol

from fleet.bmc.limits import CallDeadline, bounded
from fleet.master.text import clean

PowerState = Literal["on", "off"]

TEXT_LIMIT = 200  # characters of one piece of BMC text in a message
MESSAGE_LIMIT = 1000  # characters of a whole BmcError message


def bmc_text(value: object, limit: int = TEXT_LIMIT) -> str:
    """``value`` (text or bytes a BMC or ipmitool sent) as printable ASCII on one line, at
    most ``limit`` characters: control characters, escape sequences and non-ASCII become
    spaces, runs of white space one space, and a longer text ends in ``...``."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value[: limit * 4]).decode("utf-8", errors="replace")
    return clean(value, limit)


class BmcError(Exception):
    """Any failure talking to a BMC; the message names the BMC and what failed. The
    message is cleaned (:func:`bmc_text`, at most MESSAGE_LIMIT characters)."""

    def __init__(self, message: object = "") -> None:
        super().__init__(bmc_text(message, MESSAGE_LIMIT))


class BmcUnreachableError(BmcError):
    """No answer: connection refused, timeout, DNS or TLS failure."""


class BmcTimeoutError(BmcUnreachableError):
    """No complete answer within the request's or the call's deadline (fleet.bmc.limits):
    a BMC that answers too slowly, a byte at a time, or not at all."""


class BmcAuthError(BmcError):
    """The BMC rejected the credentials (HTTP 401/403, IPMI session refused)."""


class BmcProtocolError(BmcError):
    """The BMC answered, but not as expected (status, body, missing resource or value, an
    answer larger than fleet.bmc.limits.MAX_ANSWER, a malformed ETag)."""


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


class ClientBase(ABC):
    """What the Redfish and IPMI clients share: the call deadline their methods run under
    (fleet.bmc.limits), and the verbs made of their other verbs."""

    def __init__(self, call_timeout: float) -> None:
        self._deadline = CallDeadline(call_timeout)

    @property
    def deadline(self) -> CallDeadline:
        return self._deadline

    @abstractmethod
    def power_state(self) -> PowerState: ...

    @abstractmethod
    def set_pxe_once(self) -> None: ...

    @abstractmethod
    def power_on_or_reset(self) -> str: ...

    @abstractmethod
    def power_on(self) -> str: ...

    @abstractmethod
    def _cycle(self) -> str:
        """Off, then on again, of a node that is on; the action sent."""

    @bounded
    def pxe_boot_now(self) -> str:
        self.set_pxe_once()
        return self.power_on_or_reset()

    @bounded
    def power_cycle(self) -> str:
        if self.power_state() == "off":
            return self.power_on()
        return self._cycle()
