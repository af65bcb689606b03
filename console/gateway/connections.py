"""The clients of one cluster: created once and cached, renewed after stale metadata, drained of
their error callbacks, and every call made through them timed, counted and translated.

confluent-kafka (librdkafka) is the main client; kafka-python fills what librdkafka lacks (the KRaft
quorum, reassignments, log dirs, batched group reads), one client per purpose, each call in a helper
thread with a hard time limit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from console.gateway.causes import ErrorLog, classify
from console.gateway.config import ClusterConfig
from console.gateway.errors import ClusterUnavailable, GatewayError
from console.gateway.refusals import principal
from console.gateway.throttling import log_for
from console.gateway.translate import connection_failure, translate

log = logging.getLogger(__name__)

# Kafka calls made in the current context (a web request, a watcher cycle), when someone counts.
request_counter: ContextVar[list[int] | None] = ContextVar("kafka_request_counter", default=None)
logging.getLogger("kafka").setLevel(logging.CRITICAL)  # kafka-python logs every failed connect

T = TypeVar("T")

# ListOffsets and DeleteRecords are sent only for topics the admin client's metadata cache holds.
# librdkafka looks up the leaders of such a request in that cache; when one is missing it waits for
# the cache to change, and a change landing while the calling thread is still inside that lookup
# lets librdkafka's own thread free the request under it: a SIGSEGV (mtx_lock(NULL) in
# rd_kafka_topic_partition_list_query_leaders_async_worker, librdkafka 2.16). So a client is filled
# by a Metadata request before its first such request, and again for topics it has not seen: a few
# one by one (up to WARM_ONE_BY_ONE), many at once with every topic.
WARM_ONE_BY_ONE = 20
WARM_ALL_AGAIN_SECONDS = 10.0
WARM_ABSENT_SECONDS = 10.0
# Cache entries outlive every such refill (metadata.max.age.ms, the most librdkafka allows); stale
# leaders are handled by renewal instead (NOT_LEADER -> a fresh client, filled again).
ADMIN_METADATA_MAX_AGE_MS = 86_400_000
WARM_AGAIN_SECONDS = ADMIN_METADATA_MAX_AGE_MS / 1000 / 2


@dataclass
class _KafkaPythonSlot:
    client: KafkaAdminClient | None = None
    busy_since: float | None = None


def askable(topics: dict[str, Any]) -> frozenset[str]:
    """The topics of a Metadata answer whose leaders librdkafka can look up at once: those without
    an error that have partitions. A topic being created (no partitions yet, LEADER_NOT_AVAILABLE)
    sends ListOffsets down the path that waits for the cache (see WARM_ONE_BY_ONE): not asked."""
    return frozenset(name for name, tm in topics.items() if tm.error is None and tm.partitions)


class Connections:
    """The cached clients of one cluster and the one way calls go through them (`_call`).
    Thread-safe; one per cluster per process (as the ClusterGateway built on it)."""

    def __init__(self, config: ClusterConfig, timeout: float) -> None:
        self.config = config
        self.name = config.name
        self.timeout = timeout
        self.throttles = log_for(config.name)  # answers Kafka throttled by a quota on the console (throttling.py)
        self._lock = threading.Lock()
        self._admin: AdminClient | None = None
        self._admin_born = 0.0
        # The topics an admin client's metadata cache holds, and since when (_cached_topics); the
        # client by a weak reference, which must never keep a replaced one alive (see _retired).
        self._admin_topics: tuple[weakref.ref[AdminClient] | None, frozenset[str], float] = (None, frozenset(), 0.0)
        self._absent: dict[str, float] = {}  # topics found missing, and when (_cached_topics)
        self._warm_lock = threading.Lock()
        # Admin clients replaced (renew_admin, close), with when: kept alive until every request
        # they may still have in flight has timed out, then released by the drainer thread. A
        # librdkafka client freed while another thread waits on its futures (the last reference
        # dropped in renew_admin) crashes the process ("double free or corruption") or hangs it.
        self._retired: list[tuple[float, AdminClient]] = []
        self._kp_slots: dict[str, _KafkaPythonSlot] = {}
        # How often a client was replaced after a retriable error, and the retries that followed
        # (bench/leadermove.py reads them).
        self.renewals = 0
        self.retries = 0
        # Requests sent through each purpose's kafka-python client (the watcher records them per refresh).
        self.kafka_python_requests: dict[str, int] = {}
        # Connection errors librdkafka reports only to error_cb (a wrong password, a TLS handshake,
        # a refused port): a failed call only says "Broker transport failure". See causes.py.
        self.connection_errors = ErrorLog()
        self._answered_at = 0.0  # time.monotonic() of the last call that succeeded
        self._drained_clients: list[Producer] = []

    # Error callbacks ---------------------------------------------------------------------------
    def on_error(self, err: KafkaError) -> None:
        """error_cb of every librdkafka client of this cluster (served by their poll)."""
        self.connection_errors.record(err.name(), err.str())

    def keep_drained(self, client: Producer) -> None:
        """Serve a long-lived client's error callbacks now and then, as the admin client's are
        (a consumer serves its own while it consumes)."""
        with self._lock:
            self._drained_clients.append(client)
        _keep_drained(self)

    def forget_client(self, client: Producer) -> None:
        """Stop serving a long-lived client that is being replaced."""
        with self._lock:
            self._drained_clients = [c for c in self._drained_clients if c is not client]

    def _drain(self) -> None:
        """Serve the error callbacks librdkafka queued until poll(): each client with an error_cb
        queues one per failed connection attempt (a few a second while a cluster is unreachable),
        so they are served after every call and every few seconds by a helper thread."""
        admin = self._admin
        if admin is not None:
            admin.poll(0)
        for client in self._drained_clients:
            client.poll(0)

    def release_retired(self, now: float | None = None) -> int:
        """Free the replaced admin clients whose requests have all timed out (called by the drainer
        thread, never by librdkafka's, where freeing a client aborts the process). How many were freed."""
        grace = 3 * self.timeout + 5
        now = time.monotonic() if now is None else now
        with self._lock:
            done = [c for at, c in self._retired if now - at > grace]
            self._retired = [(at, c) for at, c in self._retired if now - at <= grace]
        count = len(done)
        del done  # the last references: the clients are destroyed here, in this thread
        return count

    # librdkafka's admin client -----------------------------------------------------------------
    def _admin_client(self) -> AdminClient:
        with self._lock:
            if self._admin is None:
                conf: dict[str, Any] = {
                    **self.config.librdkafka(),
                    "client.id": "kafka-console",
                    "socket.connection.setup.timeout.ms": int(self.timeout * 1000),
                    "reconnect.backoff.max.ms": 1000,
                    "log_level": 2,  # connection failures are reported as errors instead
                    "error_cb": self.on_error,
                    "throttle_cb": self.throttles.callback("admin"),
                    "metadata.max.age.ms": ADMIN_METADATA_MAX_AGE_MS,
                    **self._admin_conf(),
                }
                self._admin = AdminClient(conf)
                self._admin_born = time.monotonic()
                _keep_drained(self)
            return self._admin

    def _admin_conf(self) -> dict[str, Any]:
        """More librdkafka settings of the admin client (a test's debug logger)."""
        return {}

    def _cached_topics(self, admin: AdminClient, topics: set[str], deadline: float) -> frozenset[str]:
        """Which of `topics` exist, after making sure `admin`'s metadata cache holds every one
        that does (see WARM_ONE_BY_ONE). A client never filled is filled with every topic. Topics
        it has not seen are asked for one by one, up to WARM_ONE_BY_ONE a call, or all at once with
        every topic (at most every WARM_ALL_AGAIN_SECONDS; the rest wait for a later call). A topic
        not there is left out of the request (deleted), and not asked for again for
        WARM_ABSENT_SECONDS: a sampling pass still naming a deleted topic costs no request."""
        with self._warm_lock:
            owner, known, at = self._admin_topics
            now = time.monotonic()
            if owner is None or owner() is not admin or now - at >= WARM_AGAIN_SECONDS:
                known, at = frozenset(), 0.0
                self._absent = {}
            absent = self._absent
            missing = sorted(t for t in topics - known if now - absent.get(t, -WARM_ABSENT_SECONDS) >= WARM_ABSENT_SECONDS)
            if not missing:
                return frozenset(topics & known)
            timeout = max(0.5, deadline - now)
            if len(missing) > WARM_ONE_BY_ONE and now - at >= WARM_ALL_AGAIN_SECONDS:
                known, at = askable(admin.list_topics(timeout=timeout).topics), now
                self._absent = absent = dict.fromkeys((t for t in missing if t not in known), now)
            else:
                found = set()
                for name in missing[:WARM_ONE_BY_ONE]:
                    if askable(admin.list_topics(topic=name, timeout=timeout).topics) >= {name}:
                        found.add(name)
                    else:
                        absent[name] = now
                known = known | found
            self._admin_topics = (weakref.ref(admin), known, at)
            return frozenset(topics & known)

    def renew_admin(self) -> bool:
        """Replace the librdkafka admin client after a retriable error (not leader, unknown
        partition, leader not available): librdkafka's admin ListOffsets keeps asking the leader it
        cached (librdkafka #2955, #4620), and a fresh client asks the cluster for metadata first.
        At most once a second, so an offline partition cannot make the console reconnect in a loop."""
        with self._lock:
            if self._admin is None or time.monotonic() - self._admin_born < 1.0:
                return False
            self._retired.append((time.monotonic(), self._admin))
            self._admin = None
            self.renewals += 1
            return True

    # kafka-python's clients, one per purpose ---------------------------------------------------
    def _with_kafka_python(self, purpose: str, fn: Callable[[KafkaAdminClient], T]) -> T:
        """Run `fn` on this purpose's own kafka-python client, in a helper thread with a hard time
        limit: when no broker answers, kafka-python can block far longer than its request timeout
        (while bootstrapping), and that must never stall the watcher or a page."""
        with self._lock:
            slot = self._kp_slots.get(purpose)
            if slot is None or (slot.busy_since is not None and time.monotonic() - slot.busy_since > 3 * self.timeout + 5):
                slot = self._kp_slots[purpose] = _KafkaPythonSlot()  # abandon a call that never came back
            if slot.busy_since is not None:
                raise ClusterUnavailable(f"Cluster '{self.name}' has not answered an earlier request yet ({purpose}).")
            slot.busy_since = time.monotonic()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                if slot.client is None:
                    slot.client = KafkaAdminClient(
                        **self.config.kafka_python(),
                        client_id="kafka-console",
                        request_timeout_ms=int(self.timeout * 1000),
                        reconnect_backoff_max_ms=1000,
                    )
                    self._count_requests(slot.client, purpose)
                self._fresh_metadata(slot.client)
                outcome["value"] = fn(slot.client)
            except Exception as exc:  # noqa: BLE001 - handed to the caller below
                outcome["error"] = exc
                client, slot.client = slot.client, None  # forget cached coordinators and connections
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
            finally:
                slot.busy_since = None

        worker = threading.Thread(target=work, name=f"kafka-python-{self.name}-{purpose}", daemon=True)
        worker.start()
        worker.join(self.timeout + 2)
        if worker.is_alive():
            raise ClusterUnavailable(f"Cluster '{self.name}' did not answer within {self.timeout:.0f} s ({purpose}).")
        if "error" in outcome:
            raise outcome["error"]
        return cast(T, outcome["value"])

    @staticmethod
    def _fresh_metadata(client: KafkaAdminClient, max_age_ms: float = 5000) -> None:
        """kafka-python keeps its broker list for metadata_max_age_ms (5 min by default): a broker
        that registers after the console started would not be asked for its groups, nor its log
        dirs, for minutes. Refresh it when older than a few seconds (one small Metadata request)."""
        cluster = client._manager.cluster
        if time.monotonic() * 1000 - cluster._last_successful_refresh_ms > max_age_ms:
            client._manager.run(cluster.refresh_metadata)

    def forget_kafka_python(self, purpose: str) -> None:
        """Drop a purpose's kafka-python client (its cached coordinators and connections) once
        it is idle, so the next call finds coordinators afresh."""
        with self._lock:
            slot = self._kp_slots.get(purpose)
            if slot is None or slot.busy_since is not None or slot.client is None:
                return
            client, slot.client = slot.client, None
            self.renewals += 1
        with contextlib.suppress(Exception):
            client.close()

    def _count_requests(self, client: KafkaAdminClient, purpose: str) -> None:
        manager = client._manager
        send = manager.send

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.kafka_python_requests[purpose] = self.kafka_python_requests.get(purpose, 0) + 1
            return send(*args, **kwargs)

        manager.send = counted  # type: ignore[method-assign]

    # Every call --------------------------------------------------------------------------------
    def _call(self, action: str, fn: Callable[[], T], silence_is_a_cause: bool = False) -> T:
        counter = request_counter.get()
        if counter is not None:
            counter[0] += 1
        self._drain()  # errors from before this call are not its cause
        started = time.monotonic()
        try:
            answer = fn()
        except Exception as exc:  # noqa: BLE001 - every library error becomes a GatewayError
            raise self.translate(exc, action, started, silence_is_a_cause) from exc
        self._answered_at = time.monotonic()
        return answer

    def translate(self, exc: BaseException, action: str, started: float | None = None,
                  silence_is_a_cause: bool = False) -> GatewayError:
        """translate(), and when no connection could be made, the cause in a sentence (causes.py).

        `silence_is_a_cause`: with no error reported, the time the call took says what happened
        (the whole timeout: nobody answered; less: the broker closed the connection). Only for
        calls any live broker answers (metadata), where that cannot be a slow partition's fault."""
        error = translate(exc, self.name, action, principal(self.config))
        if not connection_failure(exc):
            return error
        self._drain()
        now = time.monotonic()
        since = started if started is not None else now - self.timeout
        elapsed = now - started if started is not None and silence_is_a_cause else None
        # librdkafka reports a connection error once while it stays the same (a port still refusing
        # stays silent): with nothing new during the call, what was reported since the last call
        # that succeeded is still the cause.
        observed = self.connection_errors.since(since) or self.connection_errors.since(self._answered_at)
        cause = classify(observed, self.config, self.timeout, elapsed)
        if cause is None:
            return error
        enriched = type(error)(f"Cluster '{self.name}' is unreachable. {cause.sentence}")
        enriched.cause = cause
        return enriched

    def _result(self, future: Future[T]) -> T:
        return future.result(timeout=self.timeout + 1)

    def close(self) -> None:
        with self._lock:
            slots, self._kp_slots = self._kp_slots, {}
            if self._admin is not None:
                self._retired.append((time.monotonic(), self._admin))
            self._admin = None
        for slot in slots.values():
            if slot.client is not None and slot.busy_since is None:
                with contextlib.suppress(Exception):
                    slot.client.close()


# The drainer: one thread serves every cluster's error callbacks and frees retired clients.
_drained: weakref.WeakSet[Connections] = weakref.WeakSet()
_drainer: threading.Thread | None = None
_drainer_lock = threading.Lock()


def _keep_drained(connections: Connections, interval: float = 2.0) -> None:
    """Serve the cluster's error callbacks every `interval` seconds, even while nobody calls it."""
    global _drainer
    with _drainer_lock:
        _drained.add(connections)
        if _drainer is None or not _drainer.is_alive():
            _drainer = threading.Thread(target=_drain_forever, args=(interval,), name="kafka-error-callbacks", daemon=True)
            _drainer.start()


def _drain_forever(interval: float) -> None:
    while True:
        time.sleep(interval)
        for connections in list(_drained):
            try:
                connections._drain()
                connections.release_retired()
            except Exception:  # noqa: BLE001 - a closed client must not stop the others being served
                log.debug("serving the error callbacks of %s failed", connections.name, exc_info=True)
