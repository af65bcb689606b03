"""Reads a metadata cycle uses but must not be held up by (the KRaft quorum, the brokers' racks,
new topics' min ISR), each in a thread of its own (SideRead).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from console.gateway.errors import GatewayError

log = logging.getLogger(__name__)

SIDE_READ_WAIT = 0.5  # seconds a cycle waits, past its metadata, for a side read (SideRead) before going on without it
SIDE_READ_RETRY = 5.0  # seconds before a failed racks or new topics' min ISR read is started again (not every cycle)


class SideRead:
    """A read a cycle uses but must not be held up by: the KRaft quorum, the brokers' racks. It runs
    in a thread of its own, started by the cycle (the quorum's beside the metadata read); the cycle
    takes its answer if it has come when the cycle needs it, after at most `wait` seconds more, and
    otherwise goes on with what it knew and takes the answer in a later cycle. One read at a time:
    starting one while another is out, or while an answer waits to be taken, does nothing.

    These reads can wait out a whole request timeout (the quorum right after its leader died, a
    broker just restarted), and made inside the cycle they held back everything it had read: a
    broker back up was shown down for as long."""

    def __init__(self, name: str, read: Callable[..., Any]) -> None:
        self.name = name
        self._read = read
        self._cond = threading.Condition()
        self._out = False  # a read is running
        self._answer: tuple[Any, GatewayError | None] | None = None  # (value, error), not taken yet

    def start(self, *args: Any) -> bool:
        """Start a read (of `args`) unless one is out or its answer waits; whether one was started."""
        with self._cond:
            if self._out or self._answer is not None:
                return False
            self._out = True
        threading.Thread(target=self._run, args=args, name=f"side-read-{self.name}", daemon=True).start()
        return True

    def _run(self, *args: Any) -> None:
        answer: tuple[Any, GatewayError | None]
        try:
            answer = (self._read(*args), None)
        except GatewayError as exc:
            answer = (None, exc)
        except Exception as exc:  # noqa: BLE001 - a bug must not leave the read out for ever
            log.exception("side read %s failed", self.name)
            answer = (None, GatewayError(f"Reading {self.name} failed ({type(exc).__name__})."))
        with self._cond:
            self._answer, self._out = answer, False
            self._cond.notify_all()

    def take(self, wait: float = 0.0) -> tuple[Any, GatewayError | None] | None:
        """The answer of the last read started, (value, error), waiting for it at most `wait`
        seconds; None when it has not come (or none was started)."""
        with self._cond:
            if wait > 0:
                self._cond.wait_for(lambda: self._answer is not None or not self._out, wait)
            answer, self._answer = self._answer, None
            return answer

