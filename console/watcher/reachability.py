"""Which live brokers refuse the console's connections (BrokerReachability): a broker whose process
died is marked within a metadata cycle, while Kafka still lists it until its session times out.

Each cycle probes the ports of the brokers of the last metadata answer (gateway.reachability) in a
thread of its own, started beside the metadata read and taken after it: a probe answers in one
round trip, so the cycle rarely waits for it, and never longer than PROBE_WAIT.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable

from console.gateway.reachability import ACCEPTED, REFUSED, TIMED_OUT, UNREACHED, Address
from console.gateway.types import Broker
from console.watcher.side_read import SideRead

log = logging.getLogger(__name__)

PROBE_WAIT = 0.05  # seconds a cycle waits, past its metadata, for the probe of the brokers' ports
# Probes in a row that time out (or that the network says cannot reach the host) before a broker
# counts as unreachable: a refusal is the host's own answer, a missing one may be a slow network.
SILENT_PROBES = 2


class BrokerReachability:
    """The brokers each cycle's probe found unreachable: one that refused at once, one that did not
    answer after SILENT_PROBES probes in a row; reachable again at its first accepted connection."""

    def __init__(self, probe: Callable[[Collection[Address]], dict[Address, str]]) -> None:
        self._read = SideRead("the brokers' ports", probe)
        self._addresses: dict[int, Address] = {}  # broker id -> its address, of the last metadata answer
        self._silent: dict[int, int] = {}  # broker id -> probes in a row without an answer
        self.unreachable: frozenset[int] = frozenset()

    def start(self) -> bool:
        """Probe the ports of the last metadata's brokers (unless a probe is still out); whether one started."""
        return bool(self._addresses) and self._read.start(frozenset(self._addresses.values()))

    def take(self, brokers: Iterable[Broker], wait: float = PROBE_WAIT) -> frozenset[int]:
        """The brokers of this metadata answer (`brokers`) found unreachable, with the probe's
        answer if it came within `wait` seconds (else as the last answers left them)."""
        addresses = {b.id: (b.host, b.port) for b in brokers}
        answer = self._read.take(wait)
        if answer is not None and answer[0] is not None:
            self._fold(answer[0])
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
