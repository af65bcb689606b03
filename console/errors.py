"""Errors that carry a sentence for the user and the HTTP status to answer with."""

from __future__ import annotations


class ConsoleError(Exception):
    http_status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadParameter(ConsoleError):
    """A query parameter or form field the console cannot use."""

    http_status = 400


class Forbidden(ConsoleError):
    """The user's role does not allow this particular change (beyond what the method needs)."""

    http_status = 403


class NoSnapshot(ConsoleError):
    """The watcher has not written a snapshot of this cluster yet (just started, or not running).
    Pages and API answer it the same way: 503, one sentence."""

    http_status = 503

    def __init__(self, cluster: str) -> None:
        super().__init__(
            f"There is no snapshot of cluster '{cluster}' yet: the watcher has not reported it. "
            "Try again in a few seconds; if this lasts, check that the watcher (manage.py watch) is running."
        )
        self.cluster = cluster


class PartUnreadable(ConsoleError):
    """A stored group's part could not be read when a page first asked for it (written by another
    version of the console, or damaged): the page says so; the watcher writes the snapshot again."""

    http_status = 503


class Conflict(ConsoleError):
    """The request is fine but the state does not allow it now (a job already running, a finished job)."""

    http_status = 409


class LimitReached(ConsoleError):
    """The user already has as much of this running or queued as one user may (a per-user limit)."""

    http_status = 429
