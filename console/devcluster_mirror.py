"""MirrorMaker 2 as three connectors on the local Connect worker: the demo flow local -> backup of
`make run` (`manage.py connectworker up --mirror`) and the tests' flow.

The worker's own Kafka cluster is the source, and a Connect source connector writes its records to
the worker's cluster: each connector's producer is pointed at the target instead
(producer.override.bootstrap.servers, allowed by the worker's override policy "All"), as MM2 on Connect
expects its records in the target. Records are copied as bytes (ByteArrayConverter), headers too.
"""

from __future__ import annotations

import requests

from console.devcluster import DevClusterError

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
PACKAGE = "org.apache.kafka.connect.mirror."


def connector_names(source: str, target: str) -> dict[str, str]:
    """Each MM2 connector's class and name for the flow source -> target."""
    return {kind: f"mm2-{source}-{target}-{kind.lower()}" for kind in ("Source", "Checkpoint", "Heartbeat")}


def mirror_configs(source: str, source_bootstrap: str, target: str, target_bootstrap: str, topics: str = ".*",
                   groups: str = ".*", interval: int = 5) -> dict[str, dict[str, str]]:
    """The configs of the flow's MirrorSourceConnector, MirrorCheckpointConnector and MirrorHeartbeatConnector.

    `interval`: seconds between topic and group refreshes, checkpoints, heartbeats and group offset syncs
    (Kafka's defaults are 60 s and more; a demo and a test want to see them within seconds)."""
    common = {
        "source.cluster.alias": source, "target.cluster.alias": target,
        "source.cluster.bootstrap.servers": source_bootstrap, "target.cluster.bootstrap.servers": target_bootstrap,
        "producer.override.bootstrap.servers": target_bootstrap,
        "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES, "tasks.max": "1",
        # The backup cluster has one node; the source cluster has no authorizer to copy ACLs from.
        "replication.factor": "1", "checkpoints.topic.replication.factor": "1", "heartbeats.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1", "sync.topic.acls.enabled": "false",
    }
    seconds = str(interval)
    specific = {
        "Source": {"topics": topics, "refresh.topics.interval.seconds": seconds, "sync.topic.configs.interval.seconds": seconds,
                   # An offset sync for every record, so a group's offset translates exactly, not to an earlier sync.
                   "offset.lag.max": "0"},
        "Checkpoint": {"groups": groups, "refresh.groups.interval.seconds": seconds, "emit.checkpoints.interval.seconds": seconds,
                       "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": seconds},
        "Heartbeat": {"emit.heartbeats.interval.seconds": seconds},
    }
    names = connector_names(source, target)
    configs = {names[kind]: {"connector.class": f"{PACKAGE}Mirror{kind}Connector", **common, **extra}
               for kind, extra in specific.items()}
    # Heartbeats emitted in the source too (as dedicated MM2 does for the reverse pair even when that flow is
    # off), so the source connector replicates them as `<source>.heartbeats`: their age is the flow's lag in time.
    upstream = {**common, "source.cluster.alias": target, "target.cluster.alias": source,
                "source.cluster.bootstrap.servers": target_bootstrap, "target.cluster.bootstrap.servers": source_bootstrap,
                "producer.override.bootstrap.servers": source_bootstrap}
    configs[connector_names(target, source)["Heartbeat"]] = {
        "connector.class": f"{PACKAGE}MirrorHeartbeatConnector", **upstream, **specific["Heartbeat"]}
    return configs


def install_mirror(connect_url: str, configs: dict[str, dict[str, str]]) -> None:
    """Create (or update) the flow's connectors; PUT .../config is idempotent."""
    for name, config in configs.items():
        answer = requests.put(f"{connect_url}/connectors/{name}/config", json=config, timeout=30)
        if answer.status_code >= 400:
            raise DevClusterError(f"the Connect worker refused the MirrorMaker 2 connector {name}: {answer.text}")
