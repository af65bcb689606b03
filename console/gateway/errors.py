"""The gateway's errors: each carries a sentence a user can act on, and whether retrying may help."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.errors import ConsoleError
from console.lifecycle import failure_seen

if TYPE_CHECKING:
    from console.gateway.causes import Cause


class GatewayError(ConsoleError):
    """Base of every error the gateway raises; `str(error)` is the sentence to show."""

    permanent = True
    http_status = 502
    cause: Cause | None = None  # why no connection could be made, when that is why the call failed

    def __init__(self, message: str) -> None:
        super().__init__(message)
        failure_seen()  # (see console.lifecycle: the watcher collects what a failure leaves in cycles)


class ClusterUnavailable(GatewayError):
    permanent = False
    http_status = 503


class NotFound(GatewayError):
    http_status = 404


class InvalidRequest(GatewayError):
    http_status = 400


class NotAuthorized(GatewayError):
    http_status = 403


class PolicyViolation(GatewayError):
    http_status = 400


class UnknownCluster(NotFound):
    pass
