"""The watcher's side loop for tiered storage: every TIERED_POLL_INTERVAL seconds, while the watcher holds
the cluster's lease, the topics with remote.storage.enable=true are listed (one DescribeConfigs pass over
the snapshot's topics) and kept in Redis, so the topics list can flag them without asking Kafka per
request; when there are any, the bytes their partitions hold in remote storage are read from the
remote log metadata (remote_sizes.py) and kept beside them. The topic page reads its own topic's
configs live, so it never waits for this loop.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import redis
from django.conf import settings

from console import gateway, snapshots
from console.gateway import remote_log
from console.gateway.errors import GatewayError, NotFound
from topics_app import remote_sizes
from topics_app.tiered import ENABLE

# The remote log metadata read so far, per cluster (this loop is its only reader and writer).
_indexes: dict[str, remote_sizes.RemoteIndex] = {}


def key(cluster: str) -> str:
    return f"topics:tiered:{cluster}"


def tiered_topics(cluster: str) -> frozenset[str]:
    """The topics with remote storage enabled at the watcher's last look (empty when it has not looked
    lately, or Redis does not answer: the flag is a hint, the list still shows)."""
    try:
        raw = snapshots.redis_client().get(key(cluster))
    except redis.RedisError:
        return frozenset()
    return frozenset(json.loads(raw)) if raw else frozenset()


def flagged(cluster: str, rows: list[dict[str, Any]], every: bool = True) -> list[dict[str, Any]]:
    """The topics list's rows with `tiered_storage`, each flagged row a copy (rows are shared per snapshot
    version); with every=False the others stay the very rows, without the key (the page's row cache
    knows them by identity)."""
    tiered = tiered_topics(cluster)
    if not every:
        return [{**r, "tiered_storage": True} if r["name"] in tiered else r for r in rows]
    return [{**r, "tiered_storage": r["name"] in tiered} for r in rows]


def look(cluster: str) -> list[str]:
    snap = snapshots.reachable(snapshots.watched(cluster))
    if snap is None:
        return []
    configs = gateway.for_cluster(cluster).topic_configs(sorted(snap.topics), frozenset({ENABLE}))
    found = sorted(t for t, c in configs.items() if c.get(ENABLE, "").lower() == "true")
    keep_s = int(settings.TIERED_POLL_INTERVAL * 3 + 30)
    snapshots.redis_client().set(key(cluster), json.dumps(found), ex=keep_s)
    if found:
        look_remote(cluster, found, keep_s)
    return found


def look_remote(cluster: str, topics: list[str], keep_s: int) -> None:
    """Read what the remote log metadata gained since the last look into this cluster's index and store
    the tiered topics' remote sizes; a cluster whose metadata cannot be read stores why."""
    index = _indexes.setdefault(cluster, remote_sizes.RemoteIndex())
    try:
        index.positions = remote_log.read(gateway.for_cluster(cluster), index.positions, index.apply)
    except remote_log.SchemasMissing as exc:
        remote_sizes.store(cluster, None, str(exc), keep_s)
        return
    except NotFound:
        remote_sizes.store(cluster, None, f"The cluster has no {remote_log.TOPIC} topic: its brokers keep remote log metadata "
                                          "elsewhere (not Kafka's topic-based metadata manager).", keep_s)
        return
    except GatewayError as exc:
        remote_sizes.store(cluster, None, exc.message, keep_s)
        return
    remote_sizes.store(cluster, index.sizes(topics), None, keep_s)


def watch(cluster: str, stop: threading.Event, active: threading.Event) -> None:
    """The side loop: a look per TIERED_POLL_INTERVAL while the lease is held."""
    log = logging.getLogger(__name__)
    while not stop.is_set():
        if active.is_set():
            try:
                look(cluster)
            except Exception:  # noqa: BLE001 - an unanswering cluster is the watcher's to say; look again later
                log.info("listing the tiered topics of %s failed", cluster, exc_info=True)
        stop.wait(settings.TIERED_POLL_INTERVAL)
