"""Each Connect cluster's connectors as last read, kept in Redis for every page, API call and socket,
and the loop that reads them: the watcher runs it (console/watcher/registry.py `register_side_watch`)
while it holds the Kafka cluster's lease, one thread per Connect cluster.

Pages never wait on Connect for a list (kafka-ui's rule: lists read a cache refreshed in the
background). A read that changed anything (a state, a task, the worker answering or not) is stored
and broadcast to the cluster's pages as `connect.update`, so an open page shows it about a poll
interval after Connect reports it. A Connect cluster that does not answer keeps its last good list,
shown with the reason it could not be read.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, replace
from typing import Any

import orjson
from django.conf import settings

from connect_app.client import ConnectClient, ConnectError
from connect_app.types import ConnectClusterState, ConnectorState, TaskState
from console import snapshots
from console.connect_config import ConnectConfig
from console.realtime import cluster_group, group_send

log = logging.getLogger(__name__)

MESSAGE = "connect.update"
KEEP_SECONDS = 7 * 24 * 3600  # a Connect cluster removed from the settings leaves no key behind for long


def key(cluster: str, connect: str) -> str:
    return f"connect:{cluster}:{connect}"


def encode(state: ConnectClusterState) -> bytes:
    return orjson.dumps(asdict(state))


def decode(raw: bytes) -> ConnectClusterState:
    data: dict[str, Any] = orjson.loads(raw)
    connectors = tuple(
        ConnectorState(**{**c, "tasks": tuple(TaskState(**t) for t in c.get("tasks") or ())}) for c in data.pop("connectors", ())
    )
    return ConnectClusterState(**data, connectors=connectors)


def stored(cluster: str, connect: str) -> ConnectClusterState | None:
    try:
        raw = snapshots.redis_client().get(key(cluster, connect))
    except Exception:  # noqa: BLE001 - Redis away: the caller reads Connect itself
        log.warning("could not read the Connect state of %s/%s from Redis", cluster, connect, exc_info=True)
        return None
    return decode(raw) if raw else None


def store(state: ConnectClusterState) -> None:
    snapshots.redis_client().set(key(state.cluster, state.name), encode(state), ex=KEEP_SECONDS)


def read(cluster: str, config: ConnectConfig, client: ConnectClient, before: ConnectClusterState | None) -> ConnectClusterState:
    """One read of a Connect cluster: its connectors with their states; when it does not answer, the
    connectors of `before` with the reason."""
    now = time.time()
    try:
        version = before.version if before is not None and before.reachable and before.version else ""
        if not version:
            version = str(client.server_info().get("version", ""))
        connectors = tuple(c.state for c in client.connectors())
    except ConnectError as exc:
        kept = before.connectors if before is not None else ()
        return ConnectClusterState(cluster=cluster, name=config.name, url=config.url, reachable=False, error=exc.message,
                                   checked_at=now, read_at=before.read_at if before is not None else None,
                                   version=before.version if before is not None else "", connectors=kept)
    return ConnectClusterState(cluster=cluster, name=config.name, url=config.url, reachable=True, checked_at=now, read_at=now,
                               version=version, connectors=connectors)


def _content(state: ConnectClusterState) -> ConnectClusterState:
    """What a page shows of a read (its times aside): a read that moved none of it is not broadcast."""
    return replace(state, checked_at=None, read_at=None)


def refresh(cluster: str, config: ConnectConfig, client: ConnectClient, before: ConnectClusterState | None = None,
            broadcast: bool = True) -> ConnectClusterState:
    """Read, store and (when it changed) tell the cluster's pages."""
    state = read(cluster, config, client, before if before is not None else stored(cluster, config.name))
    changed = before is None or _content(before) != _content(state)
    try:
        store(state)
        if changed and broadcast:
            group_send(cluster_group(cluster), {"type": MESSAGE, "connect": config.name})
    except Exception:  # noqa: BLE001 - Redis away: the next read stores and broadcasts again
        log.warning("could not store or broadcast the Connect state of %s/%s", cluster, config.name, exc_info=True)
    return state


def watch(cluster: str, stop: threading.Event, active: threading.Event) -> None:
    """The watcher's side loop for one Kafka cluster: a thread per Connect cluster it has."""
    threads = [threading.Thread(target=_watch_one, args=(cluster, c, stop, active), name=f"connect-{cluster}-{c.name}", daemon=True)
               for c in settings.KAFKA_CONNECT.get(cluster, ())]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _watch_one(cluster: str, config: ConnectConfig, stop: threading.Event, active: threading.Event) -> None:
    client = ConnectClient(config)
    last: ConnectClusterState | None = None
    try:
        while not stop.is_set():
            if not active.is_set():
                last = None  # another watcher holds the lease; read afresh when it comes back
                stop.wait(0.5)
                continue
            started = time.monotonic()
            try:
                last = refresh(cluster, config, client, last if last is not None else stored(cluster, config.name))
            except Exception:
                log.exception("reading Connect cluster %s of %s failed", config.name, cluster)
            stop.wait(max(0.05, settings.CONNECT_POLL_INTERVAL - (time.monotonic() - started)))
    finally:
        client.close()
