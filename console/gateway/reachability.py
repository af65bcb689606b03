"""Whether each broker's port accepts a TCP connection from the console (`probe`): the first sign of
a broker that died, seconds before Kafka's controller fences it after its session timeout.

A refused connection is the broker host's own answer that nothing listens on the port; a
connection that neither opens nor is refused in time says less (a slow network, a host down).
Only a TCP handshake is made, then the socket is closed: no Kafka request, no TLS, no SASL, so it
costs the broker nothing it would log and works alike on every listener.
"""

from __future__ import annotations

import errno
import selectors
import socket
import threading
import time
from collections.abc import Collection

from console.gateway.connections import Connections

ACCEPTED = "accepted"
REFUSED = "refused"  # nothing listens there: the host said so
TIMED_OUT = "timed_out"  # no answer within the timeout
UNREACHED = "unreached"  # the network said the host cannot be reached (no route, host down)
UNRESOLVED = "unresolved"  # the name does not resolve: says nothing about the broker itself

PROBE_TIMEOUT = 1.0  # seconds a connection may take to open before it counts as timed out
RESOLVED_FOR = 60.0  # seconds a resolved address is reused: a probe each second must not be a DNS query each second
ADDRESSES_TRIED = 4  # of a name's addresses (IPv6 and IPv4, say), this many are tried at once: any that accepts will do

Address = tuple[str, int]
_SockAddr = tuple[int, tuple[object, ...]]  # (family, sockaddr)

_resolved: dict[Address, tuple[float, list[_SockAddr]]] = {}
_resolved_lock = threading.Lock()


def _resolve(address: Address, now: float) -> list[_SockAddr]:
    """The socket addresses of a broker's host and port (cached for RESOLVED_FOR seconds); [] when
    the name does not resolve."""
    with _resolved_lock:
        found = _resolved.get(address)
    if found is not None and now - found[0] < RESOLVED_FOR:
        return found[1]
    try:
        infos = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        infos = []
    made: list[_SockAddr] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if (family, sockaddr) not in made and len(made) < ADDRESSES_TRIED:
            made.append((family, sockaddr))
    with _resolved_lock:
        if len(_resolved) > 10_000:  # (brokers come and go over months: bounded)
            _resolved.clear()
        _resolved[address] = (now, made)
    return made


def _outcome(code: int) -> str:
    if code == 0:
        return ACCEPTED
    if code == errno.ECONNREFUSED:
        return REFUSED
    return TIMED_OUT if code == errno.ETIMEDOUT else UNREACHED  # (no route, host down, reset: the network's answer)


def _best(outcomes: list[str]) -> str:
    """A broker's outcome from those of its addresses: accepted if any accepted, refused only if
    every address refused."""
    for kind in (ACCEPTED, TIMED_OUT, UNREACHED, REFUSED):
        if kind in outcomes:
            return kind
    return UNRESOLVED


def probe(addresses: Collection[Address], timeout: float = PROBE_TIMEOUT) -> dict[Address, str]:
    """Each address's outcome (ACCEPTED, REFUSED, TIMED_OUT, UNREACHED, UNRESOLVED): every
    connection opened at once, without blocking, and waited for together, so the whole probe takes
    one round trip (at most `timeout`), whatever the number of brokers."""
    now = time.monotonic()
    seen: dict[Address, list[str]] = {address: [] for address in addresses}
    pending: dict[socket.socket, Address] = {}
    selector = selectors.DefaultSelector()
    try:
        for address in seen:
            for family, sockaddr in _resolve(address, now):
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setblocking(False)
                code = sock.connect_ex(sockaddr)
                if code in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
                    pending[sock] = address
                    selector.register(sock, selectors.EVENT_WRITE)
                else:
                    seen[address].append(_outcome(code))
                    sock.close()
        deadline = now + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, _events in selector.select(left):
                sock = key.fileobj  # type: ignore[assignment]
                address = pending.pop(sock)
                seen[address].append(_outcome(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))
                selector.unregister(sock)
                sock.close()
        for address in pending.values():
            seen[address].append(TIMED_OUT)
    finally:
        for sock in pending:
            sock.close()
        selector.close()
    return {address: _best(outcomes) for address, outcomes in seen.items()}


class BrokerProbes(Connections):
    """The brokers' ports, probed (`probe`)."""

    def probe_brokers(self, addresses: Collection[Address]) -> dict[Address, str]:
        """Whether each broker's port accepts a connection: see `probe`; never raises."""
        return probe(addresses, min(PROBE_TIMEOUT, self.timeout))
