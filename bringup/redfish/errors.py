"""What can go wrong talking to a BMC, as a small set of classes an operator can act on.

Every error carries a short ``kind`` (shown in tables and ``--json``) and a message that
names the BMC and says what to do. Messages are built by this package, never copied from a
request, and pass through ``redact`` before they leave a node's worker, so a password can
not ride along in an exception.
"""

from __future__ import annotations

from collections.abc import Iterable

from bringup.core.errors import UserError


class RedfishError(UserError):
    """Base class: one BMC could not do what was asked."""

    kind = "error"

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class Unreachable(RedfishError):
    """No TCP connection, connection dropped, or no answer within the timeout."""

    kind = "unreachable"


class AmbiguousAction(Unreachable):
    """An action was sent but its answer was lost: it may or may not have happened."""


class AuthenticationFailed(RedfishError):
    kind = "authentication failed"


class TlsVerificationFailed(RedfishError):
    kind = "TLS verification failed"


class UnexpectedResponse(RedfishError):
    """The BMC answered, but not with what the Redfish schema promises."""

    kind = "unexpected response"


class NotSupported(RedfishError):
    kind = "not supported by this BMC"


class ActionFailed(RedfishError):
    """The BMC refused a change or an action (4xx/5xx); the message carries its reason."""

    kind = "action failed"


class PendingJob(ActionFailed):
    """Dell: a pending configuration job blocks changes."""

    kind = "pending job"

    def __init__(self, message: str, job_ids: list[str], *, status: int | None = None):
        super().__init__(message, status=status)
        self.job_ids = job_ids


class NotReady(RedfishError):
    """The BMC is up but not ready for changes (Dell Lifecycle Controller busy or in POST)."""

    kind = "not ready"


class StateTimeout(RedfishError):
    """An action was accepted but the BMC never reported the new state in time."""

    kind = "timed out"


class InventoryProblem(RedfishError):
    """The inventory does not give what is needed to reach this BMC (credential, address)."""

    kind = "inventory problem"


class Refused(RedfishError):
    """bringup itself declined to act on this node (a golden node without --force)."""

    kind = "refused"


class LimitExceeded(RedfishError):
    """The BMC sent more than bringup accepts from one BMC (a body, a collection, nesting): the
    node fails as a whole, whichever section asked (docs/redfish.md, "Bounds")."""

    kind = "over limit"


class DeadlineExceeded(LimitExceeded):
    """A request, or the whole node, took longer than its deadline (a BMC trickling bytes)."""

    kind = "deadline exceeded"


class InternalError(RedfishError):
    """A bug in bringup met while handling this BMC (kept per node, never fatal for others)."""

    kind = "internal error"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret replaced by ``***`` (secrets shorter than 3 characters are
    left alone: replacing every "a" would make messages unreadable and protect nothing)."""
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "***")
    return text
