"""Which live brokers refuse the console's connections (BrokerReachability): a broker whose process
died is marked within a metadata cycle, while Kafka still lists it until its session times out.

Each cycle probes the ports of the brokers of the last metadata answer (gateway.reachability) in a
thread kept for it (Prober), asked beside the metadata read and answered before the cycle needs it:
a probe takes one round trip, so the cycle rarely waits for it, and never longer than PROBE_WAIT.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable

from console.gateway.reachability import ACCEPTED, REFUSED, TIMED_OUT, UNREACHED, Address
from console.gateway.types import Broker

log = logging.getLogger(__name__)

PROBE_WAIT = 0.05  # seconds a cycle waits, past its metadata, for the probe of the brokers' ports
PROBER_IDLE = 60.0  # seconds a prober's thread waits for a probe to make before it ends (the next one starts it again)
# Probes in a row that time out (or that the network says cannot reach the host) before a broker
# counts as unreachable: a refusal is the host's own answer, a missing one may be a slow network.
SILENT_PROBES = 2


Probe = Callable[[Collection[Address]], dict[Address, str]]


class Prober:
    """Probes made one at a time by a thread kept for them: asking one (`start`) wakes the thread,
    where starting a thread each cycle made the cycle wait for it to be scheduled. Asking while one
    is out, or while its answer waits to be taken, does nothing."""

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self._cond = threading.Condition()
        self._asked: Collection[Address] | None = None
        self._out = False  # a probe is asked or running
        self._answer: dict[Address, str] | None = None  # (not taken yet)
        self._thread: threading.Thread | None = None

    def start(self, addresses: Collection[Address]) -> bool:
        with self._cond:
            if self._out or self._answer is not None:
                return False
            self._asked, self._out = addresses, True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="broker-probe", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return True

    def take(self, wait: float) -> dict[Address, str] | None:
        """The answer of the probe asked last, waiting for it at most `wait` seconds; None if it has not come."""
        with self._cond:
            if wait > 0:
                self._cond.wait_for(lambda: self._answer is not None or not self._out, wait)
            answer, self._answer = self._answer, None
            return answer

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._asked is not None, PROBER_IDLE):
                    self._thread = None
                    return
                asked, self._asked = self._asked, None
            assert asked is not None
            answer: dict[Address, str] | None = None
            try:
                answer = self._probe(asked)
            except Exception:  # noqa: BLE001 - a bug must not leave the probe out for ever
                log.exception("probing the brokers' ports failed")
            with self._cond:
                self._answer, self._out = answer, False
                self._cond.notify_all()


class BrokerReachability:
    """The brokers each cycle's probe found unreachable: one that refused at once, one that did not
    answer after SILENT_PROBES probes in a row; reachable again at its first accepted connection."""

    def __init__(self, probe: Probe) -> None:
        self._prober = Prober(probe)
        self._addresses: dict[int, Address] = {}  # broker id -> its address, of the last metadata answer
        self._silent: dict[int, int] = {}  # broker id -> probes in a row without an answer
        self.unreachable: frozenset[int] = frozenset()

    def start(self) -> bool:
        """Probe the ports of the last metadata's brokers (unless a probe is still out); whether one started."""
        return bool(self._addresses) and self._prober.start(frozenset(self._addresses.values()))

    def take(self, brokers: Iterable[Broker], wait: float = PROBE_WAIT) -> frozenset[int]:
        """The brokers of this metadata answer (`brokers`) found unreachable, with the probe's
        answer if it came within `wait` seconds (else as the last answers left them)."""
        addresses = {b.id: (b.host, b.port) for b in brokers}
        answer = self._prober.take(wait)
        if answer is not None:
            self._fold(answer)
        moved = {bid for bid, address in addresses.items() if self._addresses.get(bid) != address}
        self._addresses = addresses
        # A broker that left the metadata, or moved to another address, starts afresh.
        self._silent = {bid: n for bid, n in self._silent.items() if bid in addresses and bid not in moved}
        unreachable = frozenset(bid for bid, n in self._silent.items() if n >= SILENT_PROBES)
        if unreachable != self.unreachable:
            log.info("brokers the console cannot connect to: %s", sorted(unreachable) or "none")
        self.unreachable = unreachable
        return unreachable

    def _fold(self, outcomes: dict[Address, str]) -> None:
        for bid, address in self._addresses.items():
            outcome = outcomes.get(address)
            if outcome == ACCEPTED:
                self._silent.pop(bid, None)
            elif outcome == REFUSED:
                self._silent[bid] = SILENT_PROBES
            elif outcome in (TIMED_OUT, UNREACHED):
                self._silent[bid] = self._silent.get(bid, 0) + 1
            # (an address that does not resolve says nothing about the broker: as it was)
