"""The gateway's errors: each carries a sentence a user can act on, and whether retrying may help."""

from __future__ import annotations

from console.errors import ConsoleError


class GatewayError(ConsoleError):
    """Base of every error the gateway raises; `str(error)` is the sentence to show."""

    permanent = True
    http_status = 502


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
