"""Why a cluster cannot be reached, in one sentence: pure logic, no Kafka client, no I/O.

librdkafka answers a failed call with "Broker transport failure" whatever went wrong; the cause
(a refused password, a TLS handshake, a closed port) only reaches its error callback, one line
per connection attempt. The gateway keeps the recent lines in an ErrorLog and, when a call fails
for want of a connection, `classify` turns them into a Cause: a kind (fixed, safe to show to
anyone, as /healthz does) and a sentence naming the mechanism, user, address or reason.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from console.gateway.config import ClusterConfig

# Kinds, most telling first: when brokers disagree (one refuses the connection, one the
# password), the operator can act on the password.
AUTHENTICATION = "authentication"
TLS = "tls"
NOT_KAFKA = "not_kafka"
PROTOCOL = "protocol"
REFUSED = "refused"
RESOLVE = "resolve"
TIMEOUT = "timeout"
CLOSED = "closed"
_ORDER = (AUTHENTICATION, TLS, NOT_KAFKA, PROTOCOL, REFUSED, RESOLVE, TIMEOUT, CLOSED)

# Fixed text per kind, without hosts, users or paths: for anonymous readers (/healthz).
SUMMARIES = {
    AUTHENTICATION: "authentication failed",
    TLS: "the TLS handshake failed",
    NOT_KAFKA: "its address does not answer in the Kafka protocol",
    PROTOCOL: "the listener expects another security protocol",
    REFUSED: "no broker is listening at its address",
    RESOLVE: "its address cannot be resolved",
    TIMEOUT: "it did not answer in time",
    CLOSED: "the broker closed the connection",
}

# librdkafka codes that say "no connection" rather than "the broker said no".
CONNECTION_ERRORS = frozenset({"_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "_RESOLVE", "_AUTHENTICATION", "_SSL",
                               "_BAD_MSG", "SASL_AUTHENTICATION_FAILED"})


@dataclass(frozen=True)
class Cause:
    kind: str
    sentence: str

    @property
    def summary(self) -> str:
        return SUMMARIES[self.kind]


@dataclass(frozen=True)
class Observed:
    """One error a Kafka client reported about a connection: its code name and text."""

    name: str
    detail: str
    at: float = 0.0  # time.monotonic() when it was recorded


class ErrorLog:
    """The last connection errors of one cluster's clients, fed by their error callbacks (from
    any thread). Bounded: an unreachable cluster reports an error per reconnect, for hours."""

    def __init__(self, keep: int = 64) -> None:
        self._lock = threading.Lock()
        self._items: deque[Observed] = deque(maxlen=keep)

    def record(self, name: str, detail: str, at: float | None = None) -> None:
        if name not in CONNECTION_ERRORS or name == "_ALL_BROKERS_DOWN":
            return  # "1/1 brokers are down" says nothing the failed call did not
        with self._lock:
            self._items.append(Observed(name, detail, time.monotonic() if at is None else at))

    def since(self, at: float) -> list[Observed]:
        with self._lock:
            return [o for o in self._items if o.at >= at]


# Parsing librdkafka's lines --------------------------------------------------------------------

# "sasl_plaintext://127.0.0.1:39092/bootstrap: SASL authentication error: ... (after 319ms in state AUTH_REQ)"
_PREFIX = re.compile(r"^\s*(?:[a-z_]+://)?(?P<addr>[^\s/']+)/[^\s:]+:\s*")  # PLAINTEXT brokers have no scheme
_SUFFIX = re.compile(r"\s*\(after \d+ms in state [A-Z_]*\)?\s*$")
_CONNECT = re.compile(r"Connect to (?:ipv[46]#)?(?P<addr>\S+) failed")
_RESOLVE_ADDR = re.compile(r"Failed to resolve '(?P<addr>[^']+)'")
_OFFERED = re.compile(r"broker's supported mechanisms:\s*(?P<list>[A-Za-z0-9_,\- ]*)")
_OPENSSL_CODE = re.compile(r"error:[0-9A-Fa-f]+:[^:]*::?")


@dataclass(frozen=True)
class _Line:
    kind: str
    address: str
    text: str  # the library's words, without address prefix and timing suffix
    name: str


def _parse(item: Observed) -> _Line | None:
    text = item.detail
    address = ""
    prefix = _PREFIX.match(text)
    if prefix:
        address = prefix.group("addr")
        text = text[prefix.end():]
    text = _SUFFIX.sub("", text).strip()
    lower = text.lower()
    connect = _CONNECT.search(text)
    if connect:
        address = connect.group("addr")
    if item.name in {"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED"} or "sasl authentication" in lower:
        return _Line(AUTHENTICATION, address, text, item.name)
    if item.name == "_SSL" or "ssl handshake failed" in lower or "ssl routines" in lower or lower.startswith("ssl"):
        return _Line(TLS, address, text, item.name)
    if item.name == "_RESOLVE" or "failed to resolve" in lower:
        found = _RESOLVE_ADDR.search(text)
        return _Line(RESOLVE, found.group("addr") if found else address, text, item.name)
    if "connection refused" in lower:
        return _Line(REFUSED, address, text, item.name)
    if item.name == "_BAD_MSG" or "invalid response size" in lower:
        return _Line(NOT_KAFKA, address, text, item.name)
    if "while requesting apiversion" in lower or "security.protocol" in lower:
        return _Line(PROTOCOL, address, text, item.name)
    if item.name == "_TIMED_OUT" or "timed out" in lower:
        return _Line(TIMEOUT, address, text, item.name)
    if "disconnected" in lower or "closed" in lower or "reset by peer" in lower:
        return _Line(CLOSED, address, text, item.name)
    return None


def _addresses(lines: Iterable[_Line], fallback: str) -> str:
    found = sorted({line.address for line in lines if line.address})
    return ", ".join(found) if found else fallback


# Sentences --------------------------------------------------------------------------------------


def _authentication(lines: list[_Line], config: ClusterConfig) -> str:
    mechanism = config.sasl_mechanism or "SASL"
    user = config.sasl_username
    who = f"{mechanism} as user '{user}'" if user else mechanism
    text = lines[-1].text
    lower = text.lower()
    offered = _OFFERED.search(text)
    if "invalid credentials" in lower or ("authentication failed" in lower and "handshake" not in lower):
        return f"Authentication failed: {who} was refused by the broker (wrong user name or password)."
    if (offered is not None and not offered.group("list").strip()) or "not valid in current sasl state" in lower:
        return (f"Authentication failed: the listener at {_addresses(lines, config.bootstrap_servers)} does not use SASL; "
                f"security_protocol {config.security_protocol} does not match it.")
    if offered is not None:
        return (f"Authentication failed: the broker does not offer SASL mechanism {mechanism} "
                f"(it offers {offered.group('list').strip()}).")
    reason = re.sub(r"^SASL authentication error:\s*", "", text)
    return f"Authentication failed: {who}: {reason.rstrip('.')}."


def _tls(lines: list[_Line], config: ClusterConfig) -> str:
    # Prefer the line that says why ("SSL handshake failed: ... certificate verify failed: ...").
    best = max(lines, key=lambda line: ("handshake failed" in line.text.lower(), len(line.text)))
    address = best.address or config.bootstrap_servers
    reason = re.sub(r"^SSL handshake failed:\s*", "", best.text, flags=re.IGNORECASE)
    reason = _OPENSSL_CODE.sub("", reason).strip()
    lower = reason.lower()
    if "plaintext broker listener" in lower or "wrong version number" in lower or "packet length too long" in lower:
        return f"TLS handshake failed: the listener at {address} does not speak TLS (is it a PLAINTEXT or SASL_PLAINTEXT listener?)."
    if "certificate verify failed" in lower:
        hint = "" if config.ssl_ca_location else "; set ssl_ca_location to the CA that signed it"
        return f"TLS handshake failed: the certificate of the broker at {address} could not be verified{hint} ({reason.rstrip('.')})."
    return f"TLS handshake failed with the broker at {address}: {reason.rstrip('.')}."


def _sentence(kind: str, lines: list[_Line], config: ClusterConfig, timeout: float) -> str:
    if kind == AUTHENTICATION:
        return _authentication(lines, config)
    if kind == TLS:
        return _tls(lines, config)
    where = _addresses(lines, config.bootstrap_servers)
    if kind == NOT_KAFKA:
        return f"The service at {where} does not answer in the Kafka protocol (is this a Kafka listener?)."
    if kind == PROTOCOL:
        return (f"The broker at {where} closed the connection at once: its listener probably expects another "
                f"security protocol than {config.security_protocol} (TLS or SASL?).")
    if kind == REFUSED:
        return f"No broker is listening at {where} (connection refused)."
    if kind == RESOLVE:
        return f"The broker address {where} cannot be resolved (DNS lookup failed)."
    if kind == TIMEOUT:
        return f"Timed out after {timeout:g} s waiting for the cluster: no broker at {where} answered."
    return (f"The broker at {where} closed the connection before answering; if this lasts, check that "
            f"security_protocol {config.security_protocol} matches its listener.")


def classify(observed: Sequence[Observed], config: ClusterConfig, timeout: float, elapsed: float | None = None) -> Cause | None:
    """The cause of a failed connection, from the errors the clients reported meanwhile.

    With nothing telling reported, the time the call took decides: the whole timeout means
    nobody answered; a quick failure means a broker closed the connection. None when there is
    nothing to go on (no errors and no time given)."""
    lines = [line for line in (_parse(o) for o in observed) if line is not None]
    by_kind: dict[str, list[_Line]] = {}
    for line in lines:
        by_kind.setdefault(line.kind, []).append(line)
    for kind in _ORDER:
        if kind in by_kind:
            return Cause(kind, _sentence(kind, by_kind[kind], config, timeout))
    if elapsed is None:
        return None
    if elapsed >= 0.8 * timeout:
        return Cause(TIMEOUT, _sentence(TIMEOUT, [], config, timeout))
    return Cause(CLOSED, _sentence(CLOSED, [], config, timeout))
