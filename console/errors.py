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
