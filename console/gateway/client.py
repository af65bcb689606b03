"""Kafka clients, cached per cluster, behind methods that return the product's dataclasses.

confluent-kafka (librdkafka) does metadata, offsets, configs, topics, producing and consuming.
kafka-python fills what librdkafka lacks (the KRaft quorum).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, as_completed
from concurrent.futures import TimeoutError as FutureTimeout
from contextvars import ContextVar
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar, cast

import kafka.errors as kp_errors
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    ShareConsumer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafka.admin import KafkaAdminClient

from console.gateway import protocol
from console.gateway.causes import CONNECTION_ERRORS, ErrorLog, classify
from console.gateway.config import ClusterConfig
from console.gateway.errors import (
    ClusterUnavailable,
    GatewayError,
    InvalidRequest,
    NotAuthorized,
    NotFound,
    PolicyViolation,
)
from console.gateway.types import (
    INTERNAL_TOPICS,
    Broker,
    ClusterMetadata,
    ConfigValue,
    ConsumerGroup,
    GroupMember,
    OngoingReassignment,
    Partition,
    PartitionTable,
    Quorum,
    QuorumReplica,
    Topic,
    partition_rows,
    shared_ids,
)

log = logging.getLogger(__name__)

# Kafka calls made in the current context (a web request, a watcher cycle), when someone counts.
request_counter: ContextVar[list[int] | None] = ContextVar("kafka_request_counter", default=None)
logging.getLogger("kafka").setLevel(logging.CRITICAL)  # kafka-python logs every failed connect

T = TypeVar("T")

# librdkafka reports the source as a plain int: key the table by the enum's values.
def _same_partition(tp: tuple[str, int]) -> tuple[str, int]:
    return tp


_SOURCES = {
    ConfigSource.DEFAULT_CONFIG.value: "default",
    ConfigSource.STATIC_BROKER_CONFIG.value: "static broker",
    ConfigSource.DYNAMIC_BROKER_CONFIG.value: "dynamic broker",
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value: "dynamic default broker",
    ConfigSource.DYNAMIC_TOPIC_CONFIG.value: "dynamic topic",
}

_UNAVAILABLE = {
    "_TRANSPORT",
    "_ALL_BROKERS_DOWN",
    "_TIMED_OUT",
    "_MSG_TIMED_OUT",
    "_RESOLVE",
    "_DESTROY",
    "REQUEST_TIMED_OUT",
    "NOT_CONTROLLER",
    "BROKER_NOT_AVAILABLE",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "NETWORK_EXCEPTION",
}
_COORDINATOR_MOVED = re.compile(r"(?i)not.?coordinator|coordinator.?not.?available|coordinator.?load")

# Errors that mean the client's idea of leaders or partitions is out of date: refresh and retry.
_STALE_METADATA = {
    "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "LEADER_NOT_AVAILABLE",
    "UNKNOWN_TOPIC_OR_PART",
    "UNKNOWN_LEADER_EPOCH",
    "FENCED_LEADER_EPOCH",
    "REPLICA_NOT_AVAILABLE",
    "OFFSET_NOT_AVAILABLE",
    "_TRANSPORT",
    "_TIMED_OUT",
    "REQUEST_TIMED_OUT",
    "NOT_COORDINATOR",
    "COORDINATOR_NOT_AVAILABLE",
    "BROKER_NOT_AVAILABLE",
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
    # librdkafka's ListOffsets when its cached metadata gives none of the partitions asked a leader
    # ("no leaders found"): it sends nothing and keeps answering so until that cache is refreshed
    # (every five minutes by default), long after a restarted broker led them again.
    "_NOENT",
}
# Groups described at a time (ClusterGateway.consumer_groups): what kafka-python's decoded answers hold at once.
DESCRIBE_CHUNK = 2000
# Partitions per ListOffsets request (ClusterGateway._offsets_once): what one answer holds at once.
OFFSETS_CHUNK = 10_000
# librdkafka looks up the leaders of a ListOffsets or DeleteRecords request in its metadata cache;
# when one is missing it waits for the cache to change, and a change that lands while the calling
# thread is still inside that first lookup lets librdkafka's own thread finish and free the request
# under it: a SIGSEGV (mtx_lock(NULL) in rd_kafka_topic_partition_list_query_leaders_async_worker,
# librdkafka 2.16, from a core file of `make test`). So those requests are sent only for topics the
# client's cache holds: a client is filled by a Metadata request before its first one, and again
# for topics it has not seen (a few one by one, many at once: WARM_ONE_BY_ONE).
WARM_ONE_BY_ONE = 20
WARM_ALL_AGAIN_SECONDS = 10.0
WARM_ABSENT_SECONDS = 10.0
# Its cache entries outlive every such refill (metadata.max.age.ms, the most librdkafka allows);
# stale leaders are handled as before (NOT_LEADER -> a fresh client, filled again).
ADMIN_METADATA_MAX_AGE_MS = 86_400_000
WARM_AGAIN_SECONDS = ADMIN_METADATA_MAX_AGE_MS / 1000 / 2
_NOT_FOUND = {"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "GROUP_ID_NOT_FOUND", "RESOURCE_NOT_FOUND"}
_NOT_AUTHORIZED = {
    "TOPIC_AUTHORIZATION_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED",
    "_AUTHENTICATION",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
}


def translate(exc: BaseException, cluster: str, action: str) -> GatewayError:
    """Turn a client library's error into a GatewayError with a sentence."""
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err: KafkaError = exc.args[0]
        return translate_error(err.name(), err.str(), cluster, action)
    if isinstance(exc, KafkaError):
        return translate_error(exc.name(), exc.str(), cluster, action)
    if isinstance(exc, (FutureTimeout, TimeoutError, kp_errors.KafkaTimeoutError)):
        return ClusterUnavailable(f"Cluster '{cluster}' did not answer in time while trying to {action}.")
    if isinstance(exc, (kp_errors.KafkaConnectionError, kp_errors.NodeNotReadyError, ConnectionError)):
        return ClusterUnavailable(f"Cluster '{cluster}' is unreachable: no broker accepted a connection ({action}).")
    if isinstance(exc, kp_errors.BrokerResponseError):
        name = type(exc).__name__
        upper = "".join("_" + c if c.isupper() else c for c in name).upper().lstrip("_")
        return translate_error(upper.removesuffix("_ERROR"), str(exc), cluster, action)
    if isinstance(exc, (kp_errors.UnknownBrokerIdError, kp_errors.KafkaConnectionError)) or (
        isinstance(exc, kp_errors.KafkaError) and getattr(exc, "retriable", False)
    ):
        return ClusterUnavailable(f"Cluster '{cluster}' is unreachable: could not {action} ({exc}).")
    if isinstance(exc, kp_errors.KafkaError):
        log.warning("Kafka client error while trying to %s: %s", action, exc)
        return GatewayError(f"Could not {action} on cluster '{cluster}': {exc}")
    log.exception("unexpected error from a Kafka client while trying to %s", action)
    return GatewayError(f"Kafka client failed while trying to {action}: {exc}")


def translate_error(name: str, detail: str, cluster: str, action: str) -> GatewayError:
    if name in _UNAVAILABLE:
        return ClusterUnavailable(f"Cluster '{cluster}' is unreachable: could not {action} ({detail}).")
    if name in _NOT_FOUND:
        return NotFound(f"Could not {action}: not found on cluster '{cluster}' ({detail}).")
    if name in _NOT_AUTHORIZED:
        return NotAuthorized(f"Not authorized to {action} on cluster '{cluster}' ({detail}).")
    if name == "POLICY_VIOLATION":
        return PolicyViolation(f"Cluster '{cluster}' refused to {action} by policy: {detail}.")
    if name == "TOPIC_ALREADY_EXISTS":
        return InvalidRequest(f"Could not {action}: the topic already exists.")
    if name.startswith("INVALID_") or name in {"UNSUPPORTED_VERSION", "_INVALID_ARG", "UNKNOWN_TOPIC_ID", "OFFSET_OUT_OF_RANGE", "TOPIC_EXCEPTION",
                                               "INVALID_CONFIG"}:
        return InvalidRequest(f"Could not {action}: {detail}.")
    return GatewayError(f"Could not {action} on cluster '{cluster}': {detail} ({name}).")


def _connection_failure(exc: BaseException) -> bool:
    """Did the call fail for want of a connection (rather than the broker saying no)?"""
    if isinstance(exc, GatewayError):
        return False
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    if isinstance(err, KafkaError):
        return err.name() in CONNECTION_ERRORS
    return isinstance(exc, (FutureTimeout, TimeoutError, ConnectionError, *_KP_CONNECTION_ERRORS))


# kafka-python's connection errors; the names differ between its releases, so only those present count.
_KP_CONNECTION_ERRORS: tuple[type[BaseException], ...] = tuple(
    e for e in (getattr(kp_errors, name, None) for name in (
        "KafkaTimeoutError", "KafkaConnectionError", "NoBrokersAvailable", "NodeNotReadyError"))
    if isinstance(e, type) and issubclass(e, BaseException))


@dataclass
class _KafkaPythonSlot:
    client: KafkaAdminClient | None = None
    busy_since: float | None = None


def _error_text(error: Any) -> str | None:
    """A librdkafka error of a topic or partition as the gateway's types keep it (None: no error)."""
    return error.str() if error is not None and error.code() != 0 else None


def _says(tm: Any, topic: Topic) -> bool:
    """Whether librdkafka's metadata of a topic says what `topic` (built from an earlier answer)
    says: its error, and each partition's leader, replicas, ISR and error."""
    if _error_text(tm.error) != topic.error or len(tm.partitions) != len(topic.partitions):
        return False
    answered = tm.partitions
    for number, leader, replicas, isr, error in partition_rows(topic.partitions):
        pm = answered.get(number)
        if pm is None or pm.leader != leader or tuple(pm.replicas) != replicas or tuple(pm.isrs) != isr:
            return False
        if (pm.error is not None or error is not None) and _error_text(pm.error) != error:
            return False
    return True


# group_state: asked this many times while the group's coordinator answers with an error (moving, loading).
GROUP_STATE_ATTEMPTS = 4
GROUP_STATE_RETRY_SECONDS = 0.5


def _coordinator_error(error: str) -> bool:
    """A describe's per-group error that says nothing of the group: its coordinator moving, loading or
    not available (as opposed to none, "no such group", "not a group of this kind", not authorized)."""
    return any(name in error for name in ("NotCoordinator", "CoordinatorLoadInProgress", "CoordinatorNotAvailable"))


class ClusterGateway:
    """All Kafka calls for one cluster. Thread-safe; one instance per cluster per process."""

    def __init__(self, config: ClusterConfig, timeout: float) -> None:
        self.config = config
        self.name = config.name
        self.timeout = timeout
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
        # dropped in renew_admin) crashed the watcher ("double free or corruption") or hung it.
        self._retired: list[tuple[float, AdminClient]] = []
        self._kp_slots: dict[str, _KafkaPythonSlot] = {}
        self._topic_cache: dict[str, Topic] = {}  # topic -> the Topic built from its last answer (`_says`)
        # How often a client was replaced after a retriable error, and the retries that followed
        # (bench/leadermove.py reads them).
        self.renewals = 0
        self.retries = 0
        # Requests sent through each purpose's kafka-python client (the watcher records them per refresh).
        self.kafka_python_requests: dict[str, int] = {}
        # Connection errors librdkafka reports only to error_cb (a wrong password, a TLS handshake,
        # a refused port): a failed call only says "Broker transport failure". See causes.py.
        self.connection_errors = ErrorLog()
        self._drained_clients: list[Producer] = []

    def on_error(self, err: KafkaError) -> None:
        """error_cb of every librdkafka client of this cluster (served by their poll)."""
        self.connection_errors.record(err.name(), err.str())

    def keep_drained(self, client: Producer) -> None:
        """Serve a long-lived client's error callbacks now and then, as the admin client's are
        (a consumer serves its own while it consumes)."""
        with self._lock:
            self._drained_clients.append(client)
        _keep_drained(self)

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

    # Clients ---------------------------------------------------------------------------------
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
                known, at = _askable(admin.list_topics(timeout=timeout).topics), now
                self._absent = absent = dict.fromkeys((t for t in missing if t not in known), now)
            else:
                found = set()
                for name in missing[:WARM_ONE_BY_ONE]:
                    if _askable(admin.list_topics(topic=name, timeout=timeout).topics) >= {name}:
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

    def _call(self, action: str, fn: Callable[[], T], silence_is_a_cause: bool = False) -> T:
        counter = request_counter.get()
        if counter is not None:
            counter[0] += 1
        self._drain()  # errors from before this call are not its cause
        started = time.monotonic()
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - every library error becomes a GatewayError
            raise self.translate(exc, action, started, silence_is_a_cause) from exc

    def translate(self, exc: BaseException, action: str, started: float | None = None,
                  silence_is_a_cause: bool = False) -> GatewayError:
        """translate(), and when no connection could be made, the cause in a sentence (causes.py).

        `silence_is_a_cause`: with no error reported, the time the call took says what happened
        (the whole timeout: nobody answered; less: the broker closed the connection). Only for
        calls any live broker answers (metadata), where that cannot be a slow partition's fault."""
        error = translate(exc, self.name, action)
        if not _connection_failure(exc):
            return error
        self._drain()
        now = time.monotonic()
        since = started if started is not None else now - self.timeout
        elapsed = now - started if started is not None and silence_is_a_cause else None
        cause = classify(self.connection_errors.since(since), self.config, self.timeout, elapsed)
        if cause is None:
            return error
        enriched = type(error)(f"Cluster '{self.name}' is unreachable. {cause.sentence}")
        enriched.cause = cause
        return enriched

    def _result(self, future: Future[T]) -> T:
        return future.result(timeout=self.timeout + 1)

    # Metadata ----------------------------------------------------------------------------------
    def metadata(self) -> ClusterMetadata:
        """Live brokers, every topic and partition with leader, replicas and ISR."""

        def run() -> ClusterMetadata:
            admin = self._admin_client()
            md = admin.list_topics(timeout=self.timeout)
            # (its cache now holds every topic: _cached_topics; not waited for while another thread
            # fills the cache, which can take a slow cluster's whole timeout: that thread records it)
            if self._warm_lock.acquire(blocking=False):
                try:
                    self._admin_topics = (weakref.ref(admin), _askable(md.topics), time.monotonic())
                finally:
                    self._warm_lock.release()
            brokers = tuple(
                sorted(
                    (Broker(id=b.id, host=str(b.host), port=int(b.port), rack=getattr(b, "rack", None)) for b in md.brokers.values()),
                    key=lambda b: b.id,
                )
            )
            topics = []
            cache = self._topic_cache
            fresh: dict[str, Topic] = {}
            for name, tm in md.topics.items():
                # librdkafka hands back new objects every time; comparing their fields with the
                # Topic built last time is cheaper than building a Topic of Partitions, and an
                # unchanged topic then comes back as the same object, which lets the watcher skip it
                # by identity. (Nothing else is kept: a copy of the raw fields was 26 MB at 300,000:
                # bench/metadata_compare.py.)
                known = cache.get(name)
                if known is not None and _says(tm, known):
                    fresh[name] = known
                    topics.append(known)
                    continue
                parts = PartitionTable.of(name, sorted(
                    ((pm.id, pm.leader, pm.replicas, pm.isrs, _error_text(pm.error)) for pm in tm.partitions.values()),
                    key=itemgetter(0)))
                topic = Topic(name=name, internal=name in INTERNAL_TOPICS, partitions=parts, error=_error_text(tm.error))
                fresh[name] = topic
                topics.append(topic)
            self._topic_cache = fresh
            topics.sort(key=lambda t: t.name)
            return ClusterMetadata(cluster_id=md.cluster_id, brokers=brokers, topics=tuple(topics))

        return self._call("read the cluster metadata", run, silence_is_a_cause=True)

    def topic_metadata(self, name: str) -> Topic:
        """One topic's partitions, asked now (for a name the watcher's snapshot does not show yet);
        NotFound when Kafka does not have it either."""

        def run() -> Topic:
            md = self._admin_client().list_topics(topic=name, timeout=self.timeout)
            tm = md.topics.get(name)
            if tm is None or (tm.error is not None and tm.error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)):
                raise NotFound(f"Topic '{name}' does not exist on cluster '{self.name}'.")
            if tm.error is not None and tm.error.code() != 0:
                raise KafkaException(tm.error)
            parts = tuple(sorted((Partition(topic=name, partition=pm.id, leader=pm.leader, replicas=shared_ids(pm.replicas),
                                            isr=shared_ids(pm.isrs), error=None) for pm in tm.partitions.values()),
                                 key=lambda p: p.partition))
            return Topic(name=name, internal=name in INTERNAL_TOPICS, partitions=parts, error=None)

        return self._call(f"describe topic '{name}'", run)

    def topic_id(self, name: str) -> str:
        """The topic's id: it changes when a topic is deleted and re-created under the same name.
        NotFound when Kafka does not have the topic."""

        def run() -> str:
            futures = self._admin_client().describe_topics(TopicCollection([name]), request_timeout=self.timeout)
            return str(self._result(futures[name]).topic_id)

        return self._call(f"describe topic '{name}'", run)

    def elect_leaders(self, unclean: bool, partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], str | None]:
        """A preferred (or unclean) leader election over these partitions, None: every partition.
        Per partition: None when a leader was elected, "not needed" when the preferred replica
        already leads, else Kafka's error in a few words."""

        def run() -> dict[tuple[str, int], str | None]:
            kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
            wanted = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
            # confluent-kafka 2.16 documents request_timeout and operation_timeout, but its C side
            # fails on either ("more argument specifiers than keyword list entries"): _result bounds the wait.
            result = self._result(self._admin_client().elect_leaders(kind, wanted))
            out: dict[tuple[str, int], str | None] = {}
            for tp, err in result.items():
                error = err.args[0] if isinstance(err, KafkaException) and err.args else err
                if error is None or (isinstance(error, KafkaError) and error.code() == KafkaError.NO_ERROR):
                    out[(tp.topic, tp.partition)] = None
                elif isinstance(error, KafkaError) and error.code() == KafkaError.ELECTION_NOT_NEEDED:
                    out[(tp.topic, tp.partition)] = "not needed"
                else:
                    out[(tp.topic, tp.partition)] = error.str() if isinstance(error, KafkaError) else str(error)
            return out

        return self._call("elect leaders", run)

    # Reassignments ------------------------------------------------------------------------------
    def alter_reassignments(self, targets: dict[tuple[str, int], list[int] | None]) -> dict[tuple[str, int], str | None]:
        """Start reassignments (a new replica list) or cancel them (None: Kafka returns the partition to
        its original replicas). Per partition: None when accepted, else Kafka's error in a few words;
        cancelling a partition with nothing in progress counts as accepted."""
        if not targets:
            return {}

        def run() -> dict[tuple[str, int], str | None]:
            from kafka.structs import TopicPartition as KpPartition

            wanted = {KpPartition(t, p): r for (t, p), r in targets.items()}
            answer = self._with_kafka_python(
                "reassignments", lambda admin: admin.alter_partition_reassignments(wanted, timeout_ms=int(self.timeout * 1000))
            )
            out: dict[tuple[str, int], str | None] = {}
            for tp, err in answer.items():
                key = (tp.topic, tp.partition)
                if err is None or (targets.get(key) is None and getattr(err, "__name__", "") == "NoReassignmentInProgressError"):
                    out[key] = None
                else:
                    name = getattr(err, "__name__", str(err))
                    out[key] = getattr(err, "description", "") or name
            for key in targets:
                out.setdefault(key, "no answer from the controller")
            return out

        return self._call("alter partition reassignments", run)

    def ongoing_reassignments(self) -> dict[tuple[str, int], OngoingReassignment]:
        """Every reassignment Kafka is carrying out now (any tool's, not only the console's)."""

        def run() -> dict[tuple[str, int], OngoingReassignment]:
            answer = self._with_kafka_python(
                "reassignments", lambda admin: admin.list_partition_reassignments(timeout_ms=int(self.timeout * 1000))
            )
            return {
                (tp.topic, tp.partition): OngoingReassignment(
                    tp.topic, tp.partition, tuple(v.get("replicas") or ()), tuple(v.get("adding_replicas") or ()),
                    tuple(v.get("removing_replicas") or ()),
                )
                for tp, v in answer.items()
            }

        return self._call("list partition reassignments", run)

    def describe_partitions(self, topics: Iterable[str]) -> dict[tuple[str, int], Partition]:
        """Leader, replicas and ISR of every partition of these topics, asked of Kafka now."""
        names = sorted(set(topics))
        if not names:
            return {}

        def run() -> dict[tuple[str, int], Partition]:
            out: dict[tuple[str, int], Partition] = {}
            for start in range(0, len(names), 500):
                futures = self._admin_client().describe_topics(TopicCollection(names[start : start + 500]),
                                                               request_timeout=self.timeout)
                for name, fut in futures.items():
                    try:
                        d = self._result(fut)
                    except KafkaException as exc:
                        error = exc.args[0] if exc.args else None
                        if isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                            continue  # deleted meanwhile: absent from the answer
                        raise
                    for p in d.partitions:
                        out[(name, p.id)] = Partition(
                            name, p.id, p.leader.id if p.leader is not None else -1,
                            shared_ids(r.id for r in p.replicas), shared_ids(r.id for r in p.isr),
                        )
            return out

        return self._call("describe topics", run)

    def topics_exist(self, topics: Iterable[str]) -> dict[str, bool]:
        """For each topic: does Kafka still have it? Asked of the controller-backed describe API, for
        names a metadata answer left out (a broker answering from a stale cache can)."""
        names = sorted(set(topics))

        def run() -> dict[str, bool]:
            out: dict[str, bool] = {}
            for start in range(0, len(names), 500):
                futures = self._admin_client().describe_topics(TopicCollection(names[start : start + 500]),
                                                               request_timeout=self.timeout)
                for name, fut in futures.items():
                    try:
                        self._result(fut)
                        out[name] = True
                    except KafkaException as exc:
                        error = exc.args[0] if exc.args else None
                        if isinstance(error, KafkaError) and error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART,
                                                                              KafkaError._UNKNOWN_TOPIC):
                            out[name] = False
                        else:
                            raise
            return out

        return self._call("describe topics", run) if names else {}

    def alter_configs(self, kind: str, name: str, set_values: dict[str, str], delete: list[str]) -> None:
        """Incremental alter of a broker's ("broker", "1") or a topic's ("topic", "orders") dynamic configs."""
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_values.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
        if not entries:
            return
        rtype = ConfigResource.Type.BROKER if kind == "broker" else ConfigResource.Type.TOPIC

        def run() -> None:
            resource = ConfigResource(rtype, name, incremental_configs=entries)
            futures = self._admin_client().incremental_alter_configs([resource], request_timeout=self.timeout)
            self._result(next(iter(futures.values())))

        self._call(f"alter the configs of {kind} '{name}'", run)

    def dynamic_configs(self, kind: str, names: Iterable[str], keys: frozenset[str]) -> dict[str, dict[str, str]]:
        """The given keys where they are set dynamically on these brokers or topics (not defaults)."""
        wanted = sorted(set(names))
        rtype = ConfigResource.Type.BROKER if kind == "broker" else ConfigResource.Type.TOPIC
        dynamic = {ConfigSource.DYNAMIC_BROKER_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value}

        def run() -> dict[str, dict[str, str]]:
            out: dict[str, dict[str, str]] = {}
            for start in range(0, len(wanted), 200):
                resources = [ConfigResource(rtype, n) for n in wanted[start : start + 200]]
                futures = self._admin_client().describe_configs(resources, request_timeout=self.timeout)
                for res, fut in futures.items():
                    try:
                        entries = self._result(fut)
                    except KafkaException:
                        continue  # a topic deleted meanwhile
                    out[res.name] = {k: e.value or "" for k, e in entries.items()
                                     if k in keys and int(e.source) in dynamic and e.value}
            return out

        return self._call(f"describe {kind} configs", run)

    def forget_client(self, client: Producer) -> None:
        """Stop serving a long-lived client that is being replaced."""
        with self._lock:
            self._drained_clients = [c for c in self._drained_clients if c is not client]

    def broker_racks(self) -> dict[int, str | None]:
        """Rack of every live broker (librdkafka's metadata does not carry racks)."""

        def run() -> dict[int, str | None]:
            desc = self._result(self._admin_client().describe_cluster(request_timeout=self.timeout))
            return {node.id: node.rack for node in desc.nodes}

        return self._call("describe the cluster", run)

    def quorum(self) -> Quorum:
        """The KRaft metadata quorum: leader (the active controller), voters and observers."""

        def run() -> Quorum:
            raw = self._with_kafka_python("quorum", lambda admin: admin.describe_metadata_quorum())
            part = raw["topics"][0]["partitions"][0]
            if part.get("error"):
                raise ClusterUnavailable(f"Cluster '{self.name}' could not describe its quorum: {part['error']}")

            def replicas(items: Iterable[dict[str, Any]]) -> tuple[QuorumReplica, ...]:
                return tuple(
                    sorted(
                        (
                            QuorumReplica(
                                replica_id=r["replica_id"],
                                log_end_offset=r["log_end_offset"],
                                last_fetch_timestamp=r.get("last_fetch_timestamp", -1),
                                last_caught_up_timestamp=r.get("last_caught_up_timestamp", -1),
                            )
                            for r in items
                        ),
                        key=lambda r: r.replica_id,
                    )
                )

            return Quorum(
                leader_id=part["leader_id"],
                leader_epoch=part["leader_epoch"],
                high_watermark=part["high_watermark"],
                voters=replicas(part["current_voters"]),
                observers=replicas(part["observers"]),
            )

        return self._call("describe the KRaft quorum", run)

    # Offsets ---------------------------------------------------------------------------------
    def list_offsets(self, partitions: Iterable[tuple[str, int]], which: str) -> dict[tuple[str, int], int]:
        """Earliest or latest offset of each partition; librdkafka batches them per leader. The
        answer is keyed by the caller's own (topic, partition) objects (a caller that shares one
        tuple per partition is given no new ones: 300,000 of them and their dict were a copy per
        pass in the sampling process).

        Partitions whose leader cannot answer are left out rather than failing the whole call.
        """
        spec = int((OffsetSpec.latest() if which == "latest" else OffsetSpec.earliest())._value)
        asked = [tp if type(tp) is tuple else (tp[0], tp[1]) for tp in partitions]
        if not asked:
            return {}

        def run() -> dict[tuple[str, int], int]:
            deadline = time.monotonic() + self.timeout
            result: dict[tuple[str, int], int] = {}
            pending = asked
            errors: dict[str, int] = {}
            while True:
                retry, errors = self._offsets_once(pending, spec, deadline, result)
                # A stale leader: ask a fresh client once more, inside this call's deadline.
                if not retry or time.monotonic() + 0.2 > deadline or not self.renew_admin():
                    break
                self.retries += 1
                pending = retry
            if not result:
                why = ", ".join(f"{n} x{c}" for n, c in sorted(errors.items()))
                raise ClusterUnavailable(f"Cluster '{self.name}' returned no offsets ({len(set(asked))} partitions failed: {why}).")
            return result

        return self._call(f"list {which} offsets", run)

    def _offsets_once(self, asked: list[tuple[str, int]], spec: int, deadline: float,
                      result: dict[tuple[str, int], int]) -> tuple[list[tuple[str, int]], dict[str, int]]:
        """One ListOffsets round over `asked` (offsets into `result`, keyed by the asked objects):
        the partitions to ask again (a stale leader) and the errors by name.

        Sent OFFSETS_CHUNK partitions a request, every request at once (one deadline), each with one
        future for its whole answer, read as it completes. AdminClient.list_offsets makes a
        concurrent.futures.Future per partition (1.6 KB each): 490 MB held at once for an answer of
        300,000 partitions, besides the answer itself. So the requests go to the client's C call,
        as AdminClient.list_offsets sends them (its `_value` per spec, `_TopicPartition`s)."""
        admin = self._admin_client()
        retry: list[tuple[str, int]] = []
        errors: dict[str, int] = {}

        def failed(name: str, tps: Iterable[tuple[str, int]]) -> None:
            for tp in tps:
                errors[name] = errors.get(name, 0) + 1
                if name in _STALE_METADATA:
                    retry.append(tp)

        topics = {t for t, _ in asked}
        cached = self._cached_topics(admin, topics, deadline)
        if len(cached) < len(topics):  # deleted: never asked (librdkafka would wait for them: see _cached_topics)
            failed("_UNKNOWN_TOPIC", dict.fromkeys(tp for tp in asked if tp[0] not in cached))
            asked = [tp for tp in asked if tp[0] in cached]
        timeout = max(0.5, deadline - time.monotonic())
        chunks: dict[Future[Any], list[tuple[str, int]]] = {}
        for start in range(0, len(asked), OFFSETS_CHUNK):
            chunk = asked[start:start + OFFSETS_CHUNK]
            future: Future[Any] = Future()
            future.set_running_or_notify_cancel()
            super(AdminClient, admin).list_offsets(  # type: ignore[misc]
                [TopicPartition(t, int(p), spec) for t, p in dict.fromkeys(chunk)], future, request_timeout=timeout)
            chunks[future] = chunk
        try:
            for future in as_completed(list(chunks), timeout=timeout + 1):
                chunk = chunks.pop(future)
                try:
                    answers = future.result()
                except KafkaException as exc:  # the whole request failed
                    failed(exc.args[0].name() if exc.args and isinstance(exc.args[0], KafkaError) else "UNKNOWN", dict.fromkeys(chunk))
                    continue
                own = {tp: tp for tp in chunk}  # (the caller's objects, found by value)
                for tp, info in answers.items():
                    key = own.get((tp.topic, tp.partition))
                    if key is None:
                        continue
                    if isinstance(info, KafkaError):
                        failed(info.name(), (key,))
                    else:
                        result[key] = info.offset
                del answers, own
        except FutureTimeout:
            for chunk in chunks.values():
                failed("_TIMED_OUT", dict.fromkeys(chunk))
        return retry, errors

    # Configs -----------------------------------------------------------------------------------
    def topic_configs(self, topics: Iterable[str], keys: frozenset[str] | None = None) -> dict[str, dict[str, str]]:
        """Effective configs of topics, optionally only the given keys."""
        names = list(topics)
        if not names:
            return {}

        def run() -> dict[str, dict[str, str]]:
            result: dict[str, dict[str, str]] = {}
            for start in range(0, len(names), 500):
                resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in names[start : start + 500]]
                futures = self._admin_client().describe_configs(resources, request_timeout=self.timeout)
                for res, fut in futures.items():
                    try:
                        entries = self._result(fut)
                    except KafkaException:
                        continue  # deleted meanwhile
                    result[res.name] = {
                        k: e.value for k, e in entries.items() if (keys is None or k in keys) and e.value is not None
                    }
            return result

        return self._call("describe topic configs", run)

    def describe_topic_configs(self, topic: str) -> list[ConfigValue]:
        """Every config of a topic with where its value comes from; sensitive values are masked."""

        def run() -> list[ConfigValue]:
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
            futures = self._admin_client().describe_configs([resource], request_timeout=self.timeout)
            entries = self._result(next(iter(futures.values())))
            return sorted(
                (
                    ConfigValue(
                        name=e.name,
                        value=None if e.is_sensitive else e.value,
                        source=_SOURCES.get(int(e.source), "unknown"),
                        is_default=bool(e.is_default),
                        is_sensitive=bool(e.is_sensitive),
                        is_read_only=bool(e.is_read_only),
                    )
                    for e in entries.values()
                ),
                key=lambda c: c.name,
            )

        return self._call(f"describe the configs of topic '{topic}'", run)

    def alter_topic_configs(self, topic: str, set_values: dict[str, str], delete: list[str], validate_only: bool) -> None:
        """Incremental alter: set some keys, return others to their default; nothing else changes."""
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_values.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]

        def run() -> None:
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
            futures = self._admin_client().incremental_alter_configs(
                [resource], request_timeout=self.timeout, validate_only=validate_only
            )
            self._result(next(iter(futures.values())))

        self._call(f"alter the configs of topic '{topic}'", run)

    def log_dir_sizes(self, brokers: list[int]) -> dict[tuple[str, int], dict[int, int]]:
        """Size in bytes of every partition replica on the given brokers (from their log dirs)."""

        def run() -> dict[tuple[str, int], dict[int, int]]:
            sizes: dict[tuple[str, int], dict[int, int]] = {}
            answers = self._with_kafka_python("log dirs", lambda admin: admin.describe_log_dirs(brokers=brokers))
            for answer in answers:
                broker = answer["broker"]
                for log_dir in answer["log_dirs"]:
                    for topic in log_dir.get("topics", []):
                        for part in topic.get("partitions", []):
                            key = (topic["name"], part["partition_index"])
                            sizes.setdefault(key, {})[broker] = sizes.get(key, {}).get(broker, 0) + part["partition_size"]
            return sizes

        return self._call("describe the brokers' log dirs", run)

    # Consumer groups ---------------------------------------------------------------------------
    def consumer_groups(self, partition: Callable[[tuple[str, int]], tuple[str, int]] | None = None) -> list[ConsumerGroup]:
        """Every group with its state and members (`consumer_group_chunks`, as one list)."""
        return self._call("list consumer groups",
                          lambda: [g for chunk in self._group_chunks(partition or _same_partition) for g in chunk])

    def consumer_group_chunks(self, partition: Callable[[tuple[str, int]], tuple[str, int]] | None = None,
                              ) -> Generator[list[ConsumerGroup], None, None]:
        """Every group with its state and members, DESCRIBE_CHUNK groups at a time, each chunk
        described when the one before has been taken (so the caller, turning each into what it
        keeps, never holds every group's answer: 50 MB at 50,000 groups): one ListGroups per broker
        first, then for each chunk one batched FindCoordinator and per coordinator one
        DescribeGroups for its classic groups, one ConsumerGroupDescribe for its new-protocol groups
        (KIP-848) and one ShareGroupDescribe for its share groups (KIP-932); never one request per
        group. A read that fails raises GatewayError from the iteration. `partition`: what names
        each assigned partition in the answer, given the (topic, partition) tuple (the watcher's
        sampler passes its shared tuples: at 50,000 groups the answer held 1.5 million tuples of
        its own).

        kafka-python's decoded answers are about 3.6 KB a group beyond the ConsumerGroup made of
        them (30 partitions over two members): 180 MB held at once at 50,000 groups when all were
        described together."""
        chunks = self._group_chunks(partition or _same_partition)
        while True:
            chunk = self._call("list consumer groups", lambda: next(chunks, None))
            if chunk is None:
                return
            yield chunk

    def _group_chunks(self, named: Callable[[tuple[str, int]], tuple[str, int]]) -> Generator[list[ConsumerGroup], None, None]:
        def describe(ids: list[str], kind_of: dict[str, str]) -> Callable[[KafkaAdminClient], tuple[
                dict[str, Any], dict[str, Any], dict[str, int | None]]]:
            def run(admin: KafkaAdminClient) -> tuple[dict[str, Any], dict[str, Any], dict[str, int | None]]:
                classic = [gid for gid in ids if kind_of[gid] == "classic"]
                described = admin.describe_groups(classic) if classic else {}
                modern: dict[str, Any] = {}
                if protocol.available():
                    for kind in ("consumer", "share"):
                        of_kind = [gid for gid in ids if kind_of[gid] == kind]
                        if of_kind:
                            modern.update(protocol.describe(admin, of_kind, kind))
                cluster = admin._manager.cluster  # coordinators found while describing, cached by kafka-python
                return described, modern, {gid: cluster.get_coordinator(gid) for gid in ids}

            return run

        listed = self._with_kafka_python("groups", lambda admin: admin.list_groups())
        kinds = {g["group_id"]: g for g in listed}
        del listed
        kind_of = {gid: g.get("group_type") or "classic" for gid, g in kinds.items()}
        ordered = sorted(kinds)
        for start in range(0, len(ordered), DESCRIBE_CHUNK):
            chunk = ordered[start:start + DESCRIBE_CHUNK]
            described, modern, coordinators = self._with_kafka_python("groups", describe(chunk, kind_of))
            moved = [gid for gid, d in [*described.items(), *modern.items()]
                     if _COORDINATOR_MOVED.search(str(d.get("error") or ""))]
            if moved:  # the coordinator moved (broker restart, leader election): find it afresh next time
                log.info("coordinator of %d group(s) moved (e.g. %s); renewing the groups client", len(moved), moved[0])
                self.forget_kafka_python("groups")
            groups: list[ConsumerGroup] = []
            for gid in chunk:
                listing = kinds[gid]
                group_type = listing.get("group_type") or "classic"
                if gid in modern:
                    groups.append(self._modern_group(gid, group_type, listing, modern[gid], named))
                    continue
                d = described.get(gid, {})
                members = []
                for m in d.get("members", []):
                    assignment = (m.get("member_assignment") or {}).get("assigned_partitions", [])
                    members.append(GroupMember(
                        member_id=m.get("member_id", ""),
                        client_id=m.get("client_id", ""),
                        host=str(m.get("client_host", "")).lstrip("/"),
                        assignment=tuple([named(tp) for tp in sorted((a["topic"], p) for a in assignment for p in a["partitions"])]),
                        instance_id=m.get("group_instance_id"),
                    ))
                error = d.get("error")
                if group_type != "classic" and not error:
                    error = f"The console cannot describe {group_type} groups yet; members are not shown."
                groups.append(ConsumerGroup(
                    group_id=gid,
                    state=(d.get("group_state") if group_type == "classic" else None) or listing.get("group_state") or "Unknown",
                    protocol_type=d.get("protocol_type", listing.get("protocol_type", "")) or listing.get("protocol_type") or "",
                    group_type=group_type,
                    assignor=d.get("protocol_data", "") or "",
                    members=tuple(sorted(members, key=lambda m: m.member_id)),
                    error=error,
                    coordinator=coordinators.get(gid),
                ))
            del described, modern
            yield groups

    @staticmethod
    def _modern_group(gid: str, group_type: str, listing: dict[str, Any], d: dict[str, Any],
                      named: Callable[[tuple[str, int]], tuple[str, int]]) -> ConsumerGroup:
        members = tuple(sorted((
            GroupMember(
                member_id=m["member_id"],
                client_id=m["client_id"],
                host=m["host"],
                assignment=tuple([named(tp) for tp in m["assignment"]]),
                instance_id=m.get("instance_id"),
                epoch=m["epoch"],
                target_assignment=None if m.get("target_assignment") is None else tuple([named(tp) for tp in m["target_assignment"]]),
            )
            for m in d["members"]), key=lambda m: m.member_id))
        return ConsumerGroup(
            group_id=gid,
            state=d["state"] or listing.get("group_state") or "Unknown",
            protocol_type=listing.get("protocol_type") or group_type,
            group_type=group_type,
            assignor=d["assignor"] or "",
            members=members,
            error=d["error"],
            coordinator=d["coordinator"],
            generation=d["epoch"] if d["epoch"] >= 0 else None,
            assignment_epoch=d["assignment_epoch"] if d["assignment_epoch"] >= 0 else None,
        )

    def group_offsets(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        """Committed offsets of many groups: one OffsetFetch per coordinator (KIP-709)."""
        if not group_ids:
            return {}

        def run() -> dict[str, dict[tuple[str, int], int]]:
            raw = self._with_kafka_python("groups", lambda admin: admin.list_group_offsets(list(group_ids)))
            return {
                gid: {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items() if meta.offset >= 0}
                for gid, offsets in raw.items()
            }

        return self._call("fetch committed offsets", run)

    def share_group_offsets(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], tuple[int, int]]]:
        """Share groups' start offset and lag per partition: one DescribeShareGroupOffsets per coordinator."""
        if not group_ids or not protocol.available():
            return {}
        return self._call("fetch share group offsets",
                          lambda: self._with_kafka_python("groups", lambda admin: protocol.share_group_offsets(admin, group_ids)))

    def group_state(self, group_id: str) -> tuple[str, int, str]:
        """A group's state, member count and type ("classic", "consumer" or "share"), asked now (not
        from the snapshot): offset changes depend on it. NotFound when the group does not exist."""

        def run() -> tuple[str, int, str]:
            def describe(admin: KafkaAdminClient) -> tuple[str, int, str] | str:
                """The group's state, or the error of a coordinator that could not say (moving, loading)."""
                d = admin.describe_groups([group_id]).get(group_id) or {}
                error = str(d.get("error") or "")
                if _coordinator_error(error):
                    return error
                if "not a classic group" in error and protocol.available():
                    for kind in ("consumer", "share"):
                        m = protocol.describe(admin, [group_id], kind).get(group_id) or {}
                        if m and not m["error"]:
                            return m["state"], len(m["members"]), kind
                        if m and _coordinator_error(str(m["error"])):
                            return str(m["error"])
                state = d.get("group_state") or "Dead"
                if state == "Dead" and not d.get("members"):
                    raise NotFound(f"Consumer group '{group_id}' does not exist on cluster '{self.name}'.")
                return state, len(d.get("members", [])), "classic"

            def ask(admin: KafkaAdminClient) -> tuple[str, int, str]:
                # A coordinator moving or loading (after a broker restart) answers with an error and no
                # state: that is not "the group does not exist" (which it was taken for: a reset of a
                # live group answered 404). Asked again, then a 503 that says so.
                for attempt in range(GROUP_STATE_ATTEMPTS):
                    answer = describe(admin)
                    if not isinstance(answer, str):
                        return answer
                    if attempt + 1 < GROUP_STATE_ATTEMPTS:
                        time.sleep(GROUP_STATE_RETRY_SECONDS)
                raise ClusterUnavailable(f"Consumer group '{group_id}' could not be described now: its coordinator "
                                         f"answered {answer[:200]}. Try again in a moment.")

            return self._with_kafka_python("group", ask)

        return self._call(f"describe consumer group '{group_id}'", run)

    def offsets_for_time(self, partitions: Iterable[tuple[str, int]], timestamp_ms: int) -> dict[tuple[str, int], int]:
        """The first offset at or after a time in each partition (the end offset when there is none)."""
        request = {TopicPartition(t, p): OffsetSpec.for_timestamp(timestamp_ms) for t, p in partitions}
        if not request:
            return {}

        def run() -> dict[tuple[str, int], int]:
            admin = self._admin_client()
            topics = {tp.topic for tp in request}
            absent = sorted(topics - self._cached_topics(admin, topics, time.monotonic() + self.timeout))
            if absent:  # (never asked: see _cached_topics)
                raise NotFound(f"Topic '{absent[0]}' does not exist on cluster '{self.name}'.")
            futures = admin.list_offsets(request, request_timeout=self.timeout)
            found = {(tp.topic, tp.partition): self._result(f).offset for tp, f in futures.items()}
            missing = [k for k, v in found.items() if v < 0]
            if missing:  # no message at or after the time: the end of the log, as Kafka's own tool does
                ends = self.list_offsets(missing, "latest")
                found.update({k: ends.get(k, 0) for k in missing})
            return found

        return self._call("look up offsets by time", run)

    def alter_group_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        def run() -> None:
            from kafka.structs import OffsetAndMetadata
            from kafka.structs import TopicPartition as KpTopicPartition

            request = {KpTopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
            result = self._with_kafka_python("group", lambda admin: admin.alter_group_offsets(group_id, request))
            failed = {f"{tp.topic}-{tp.partition}": err.__name__ for tp, err in result.items() if err is not kp_errors.NoError}
            if failed:
                raise InvalidRequest(f"Kafka refused some offsets of group '{group_id}': {failed}.")

        self._call(f"set the offsets of group '{group_id}'", run)

    def alter_share_group_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        def run() -> None:
            failed = self._with_kafka_python("group", lambda admin: protocol.alter_share_group_offsets(admin, group_id, offsets))
            if failed:
                raise InvalidRequest(f"Kafka refused some start offsets of share group '{group_id}': {failed}.")

        self._call(f"set the start offsets of share group '{group_id}'", run)

    def delete_share_group_offsets(self, group_id: str, topics: list[str]) -> None:
        def run() -> None:
            failed = self._with_kafka_python("group", lambda admin: protocol.delete_share_group_offsets(admin, group_id, topics))
            if failed:
                raise InvalidRequest(f"Kafka refused to delete the offsets of share group '{group_id}' on: {failed}.")

        self._call(f"delete offsets of share group '{group_id}'", run)

    def delete_group(self, group_id: str) -> None:
        def run() -> None:
            result = self._with_kafka_python("group", lambda admin: admin.delete_groups([group_id]))
            for gid, outcome in dict(result).items():
                if outcome != "OK":
                    name = "".join("_" + c if c.isupper() else c for c in str(outcome)).upper().lstrip("_")
                    raise translate_error(name.removesuffix("_ERROR"), str(outcome), self.name, f"delete group '{gid}'")

        self._call(f"delete consumer group '{group_id}'", run)

    def delete_group_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> None:
        def run() -> None:
            from kafka.structs import TopicPartition as KpTopicPartition

            tps = [KpTopicPartition(t, p) for t, p in partitions]
            result = self._with_kafka_python("group", lambda admin: admin.delete_group_offsets(group_id, tps))
            failed = {f"{tp.topic}-{tp.partition}": err.__name__ for tp, err in result.items() if err is not kp_errors.NoError}
            if failed:
                raise InvalidRequest(f"Kafka refused to delete some offsets of group '{group_id}': {failed}.")

        self._call(f"delete offsets of group '{group_id}'", run)

    # Topics ------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str] | None = None,
                     validate_only: bool = False) -> None:
        def run() -> None:
            new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=configs or {})
            futures = self._admin_client().create_topics(
                [new], request_timeout=self.timeout, operation_timeout=self.timeout, validate_only=validate_only
            )
            self._result(futures[name])

        self._call(f"create topic '{name}'", run)

    def add_partitions(self, topic: str, total: int, validate_only: bool = False) -> None:
        def run() -> None:
            futures = self._admin_client().create_partitions(
                [NewPartitions(topic, total)], request_timeout=self.timeout, operation_timeout=self.timeout,
                validate_only=validate_only,
            )
            self._result(futures[topic])

        self._call(f"add partitions to topic '{topic}'", run)

    def delete_records(self, topic: str, before: dict[int, int]) -> dict[int, int]:
        """Delete every record below the given offset of each partition (-1: all of it).
        Returns the new start offset (low watermark) of each partition."""

        def run() -> dict[int, int]:
            admin = self._admin_client()
            if not self._cached_topics(admin, {topic}, time.monotonic() + self.timeout):
                raise NotFound(f"Topic '{topic}' does not exist on cluster '{self.name}'.")
            request = [TopicPartition(topic, p, o) for p, o in before.items()]
            futures = admin.delete_records(
                request, request_timeout=self.timeout, operation_timeout=self.timeout
            )
            return {tp.partition: self._result(f).low_watermark for tp, f in futures.items()}

        return self._call(f"delete records of topic '{topic}'", run)

    def delete_topic(self, name: str) -> None:
        def run() -> None:
            futures = self._admin_client().delete_topics([name], request_timeout=self.timeout, operation_timeout=self.timeout)
            self._result(futures[name])

        self._call(f"delete topic '{name}'", run)

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


def _askable(topics: dict[str, Any]) -> frozenset[str]:
    """The topics of a Metadata answer whose leaders librdkafka can look up at once: those without
    an error that have partitions. A topic being created (no partitions yet, LEADER_NOT_AVAILABLE)
    sends ListOffsets down the path that waits for the cache (see WARM_ONE_BY_ONE): not asked."""
    return frozenset(name for name, tm in topics.items() if tm.error is None and tm.partitions)


_drained: weakref.WeakSet[ClusterGateway] = weakref.WeakSet()
_drainer: threading.Thread | None = None
_drainer_lock = threading.Lock()


def _keep_drained(gateway: ClusterGateway, interval: float = 2.0) -> None:
    """Serve the gateway's error callbacks every `interval` seconds, even while nobody calls it."""
    global _drainer
    with _drainer_lock:
        _drained.add(gateway)
        if _drainer is None or not _drainer.is_alive():
            _drainer = threading.Thread(target=_drain_forever, args=(interval,), name="kafka-error-callbacks", daemon=True)
            _drainer.start()


def _drain_forever(interval: float) -> None:
    while True:
        time.sleep(interval)
        for gateway in list(_drained):
            try:
                gateway._drain()
                gateway.release_retired()
            except Exception:  # noqa: BLE001 - a closed client must not stop the others being served
                log.debug("serving the error callbacks of %s failed", gateway.name, exc_info=True)


class MessageProducer:
    """A cached librdkafka producer for one cluster."""

    def __init__(self, gateway: ClusterGateway, **extra: Any) -> None:
        self._cluster = gateway.name
        self._producer = Producer({**gateway.config.librdkafka(), "client.id": "kafka-console", "linger.ms": 20,
                                   "log_level": 2, **extra})

    def send(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        try:
            self._producer.produce(topic, value=value, key=key)
        except BufferError:
            self._producer.poll(0.5)
            self._producer.produce(topic, value=value, key=key)
        except KafkaException as exc:
            raise translate(exc, self._cluster, f"produce to '{topic}'") from exc
        self._producer.poll(0)

    def flush(self, timeout: float = 10.0) -> int:
        return int(self._producer.flush(timeout))


class GroupConsumer:
    """A consumer in a consumer group, committing offsets explicitly."""

    def __init__(self, gateway: ClusterGateway, group: str, topics: list[str], **extra: Any) -> None:
        self._cluster = gateway.name
        self._consumer = Consumer({**gateway.config.librdkafka(), "group.id": group, "client.id": group,
                                   "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 2, **extra})
        self._consumer.subscribe(topics)

    def poll(self, max_messages: int, timeout: float) -> int:
        """Consume up to max_messages; returns how many arrived (the demo does not need contents)."""
        try:
            messages = self._consumer.consume(num_messages=max_messages, timeout=timeout)
        except KafkaException as exc:
            raise translate(exc, self._cluster, "consume") from exc
        return sum(1 for m in messages if m.error() is None)

    def commit(self) -> None:
        try:
            self._consumer.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() == KafkaError._NO_OFFSET:
                return  # nothing consumed since the last commit
            raise translate(exc, self._cluster, "commit offsets") from exc

    def close(self) -> None:
        self._consumer.close()


class ShareGroupConsumer:
    """A member of a share group (KIP-932): records are acknowledged implicitly by the next poll."""

    def __init__(self, gateway: ClusterGateway, group: str, topics: list[str]) -> None:
        self._cluster = gateway.name
        self._consumer = ShareConsumer({**gateway.config.librdkafka(), "group.id": group, "client.id": group, "log_level": 2})
        self._consumer.subscribe(topics)

    def poll(self, timeout: float) -> int:
        try:
            return len(self._consumer.poll(timeout))
        except KafkaException as exc:
            raise translate(exc, self._cluster, "consume") from exc

    def close(self) -> None:
        self._consumer.close()
