"""MirrorMaker 2 flows: found in the MM2 connectors of a Kafka cluster's Connect clusters, measured on
both clusters through the gateway.

A flow is one (source alias, target alias) pair of a Connect cluster with a MirrorSourceConnector, whose
config names both clusters' bootstrap servers, the topics it replicates (`topics`, `topics.exclude`)
and the replication policy (remote topic `<source><separator><topic>`, or the same name with
IdentityReplicationPolicy). Each alias is matched to a configured console cluster by a shared
bootstrap server, else reached at the config's servers in plaintext.

Measured on page load: records lag per partition is the source's end offset minus the remote
topic's (MM2 copies from the start, so offsets line up unless the source was compacted or
transactional); seconds lag is the time between the newest record of the source and of the
target in a lagging partition, and for the flow the age of the newest heartbeat replicated from
the source (`<source>.heartbeats`), when one is. Group offsets come from the checkpoints topic on
the target (`<source>.checkpoints.internal`), read as Kafka's MirrorClient reads it: the newest
checkpoint of each group and partition wins.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from connect_app import services
from connect_app.mirror_codec import Checkpoint, Undecodable, decode_checkpoint
from console import gateway
from console.errors import ConsoleError
from console.gateway.client import ClusterGateway
from console.gateway.messages.scan import scan
from console.gateway.messages.scan_spec import MAX_LIMIT, ScanSpec

PACKAGE = "org.apache.kafka.connect.mirror."
KINDS = {PACKAGE + "MirrorSourceConnector": "source", PACKAGE + "MirrorCheckpointConnector": "checkpoint",
         PACKAGE + "MirrorHeartbeatConnector": "heartbeat"}
IDENTITY = PACKAGE + "IdentityReplicationPolicy"
# MirrorSourceConfig's default topics.exclude: MM2's own and Kafka's internal topics.
DEFAULT_EXCLUDE = r".*[\-\.]internal,.*\.replica,__.*"
MAX_SECONDS_PARTITIONS = 50  # lagging partitions whose newest records are read for the lag in seconds, per flow
SCAN_BUDGET = 5.0  # seconds one read of the heartbeats or checkpoints topic may take


@dataclass(frozen=True)
class Flow:
    connect: str  # the Connect cluster running the connectors
    source: str  # MM2's cluster aliases
    target: str
    source_bootstrap: str
    target_bootstrap: str
    source_cluster: str | None  # the console's name of each cluster, when it is configured
    target_cluster: str | None
    connectors: dict[str, tuple[str, str]]  # kind -> (connector name, state)
    topics: str = ".*"
    exclude: str = DEFAULT_EXCLUDE
    separator: str = "."
    identity: bool = False

    @property
    def id(self) -> str:
        return f"{self.connect}:{self.source}->{self.target}"

    def remote_topic(self, topic: str) -> str:
        return topic if self.identity else f"{self.source}{self.separator}{topic}"

    @property
    def checkpoints_topic(self) -> str:
        return f"{self.source}{self.separator}checkpoints{self.separator}internal"

    @property
    def heartbeats_topic(self) -> str:
        return self.remote_topic("heartbeats")

    def replicates(self, topic: str) -> bool:
        """MirrorSourceConnector's choice: the filter's topics and heartbeats, never internal topics or
        the target's own topics coming back (a cycle)."""
        heartbeats = topic == "heartbeats" or topic.endswith(self.separator + "heartbeats")
        if topic.startswith("__") or topic.endswith((".internal", "-internal")):
            return False
        if not self.identity and topic.startswith(self.target + self.separator):
            return False
        return heartbeats or (_matches(self.topics, topic) and not _matches(self.exclude, topic))


@dataclass(frozen=True)
class PartitionLag:
    partition: int
    source_end: int
    target_end: int | None  # None: the remote partition does not exist yet
    records: int
    seconds: float | None  # None: not measured (no lag, or past MAX_SECONDS_PARTITIONS)


@dataclass(frozen=True)
class TopicLag:
    topic: str
    remote: str
    partitions: tuple[PartitionLag, ...]

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def seconds(self) -> float | None:
        found = [p.seconds for p in self.partitions if p.seconds is not None]
        return max(found) if found else (0.0 if self.records == 0 else None)

    @property
    def created(self) -> bool:
        return all(p.target_end is not None for p in self.partitions)


@dataclass(frozen=True)
class GroupOffset:
    group: str
    topic: str  # the source topic
    partition: int
    source_offset: int | None  # the group's committed offset on the source
    checkpoint: Checkpoint | None  # MM2's newest checkpoint: upstream and translated (downstream) offsets
    target_offset: int | None  # the group's committed offset on the target (MM2's sync.group.offsets)


@dataclass
class FlowReport:
    flow: Flow
    topics: list[TopicLag] = field(default_factory=list)
    groups: list[GroupOffset] = field(default_factory=list)
    heartbeat_age: float | None = None  # seconds since the newest heartbeat replicated from the source
    measured_at: float = 0.0
    errors: list[str] = field(default_factory=list)  # what could not be read, as sentences

    @property
    def records(self) -> int:
        return sum(t.records for t in self.topics)

    @property
    def seconds(self) -> float | None:
        found = [t.seconds for t in self.topics if t.seconds is not None]
        return max(found) if found else None


def _matches(patterns: str, topic: str) -> bool:
    """MM2's topic filters: a comma-separated list of Java regular expressions, each matching the whole name."""
    for raw in patterns.split(","):
        try:
            if raw.strip() and re.fullmatch(raw.strip(), topic):
                return True
        except re.error:
            continue  # a Java-only construct: Connect accepted it, the console cannot judge it
    return False


# Finding flows -------------------------------------------------------------------------------------

def _console_cluster(bootstrap: str) -> str | None:
    wanted = {s.strip() for s in bootstrap.split(",") if s.strip()}
    for config in gateway.cluster_configs():
        if wanted & {s.strip() for s in config.bootstrap_servers.split(",")}:
            return config.name
    return None


def flows(cluster: str) -> tuple[list[Flow], list[str]]:
    """The MM2 flows of a Kafka cluster's Connect clusters, and a sentence for each Connect cluster that
    did not answer."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    errors: list[str] = []
    for connect in services.connect_clusters(cluster):
        try:
            views = services.client(connect).connectors()
        except ConsoleError as exc:
            errors.append(f"Connect cluster '{connect.name}': {exc}")
            continue
        for view in views:
            kind = KINDS.get(view.plugin)
            source, target = view.config.get("source.cluster.alias", ""), view.config.get("target.cluster.alias", "")
            if kind is None or not source or not target:
                continue
            entry = found.setdefault((connect.name, source, target), {"connectors": {}, "configs": {}})
            entry["connectors"][kind] = (view.name, view.state.state)
            entry["configs"][kind] = view.config
    # A pair with heartbeats only is no flow: its heartbeats feed the reverse flow's (see devcluster_mirror.py).
    return [_flow(key, entry) for key, entry in sorted(found.items()) if "source" in entry["connectors"]], errors


def _flow(key: tuple[str, str, str], entry: dict[str, Any]) -> Flow:
    connect, source, target = key
    configs: dict[str, dict[str, str]] = entry["configs"]
    # The source connector's config rules: it is the one that chooses topics and names remote topics.
    config = configs.get("source") or next(iter(configs.values()))
    source_bootstrap = config.get("source.cluster.bootstrap.servers", "")
    target_bootstrap = config.get("target.cluster.bootstrap.servers", "")
    return Flow(connect=connect, source=source, target=target, source_bootstrap=source_bootstrap,
                target_bootstrap=target_bootstrap, source_cluster=_console_cluster(source_bootstrap),
                target_cluster=_console_cluster(target_bootstrap), connectors=dict(entry["connectors"]),
                topics=config.get("topics", ".*"), exclude=config.get("topics.exclude", DEFAULT_EXCLUDE),
                separator=config.get("replication.policy.separator", "."),
                identity=config.get("replication.policy.class", "") == IDENTITY)


def find(cluster: str, flow_id: str) -> Flow:
    for flow in flows(cluster)[0]:
        if flow.id == flow_id:
            return flow
    raise services.NotFound(f"There is no MirrorMaker 2 flow '{flow_id}' on the Connect clusters of '{cluster}'.")


@contextmanager
def _gateway(name: str | None, bootstrap: str) -> Iterator[ClusterGateway]:
    """A configured cluster's cached gateway, or one for the flow's own servers, closed after use."""
    if name is not None:
        yield gateway.for_cluster(name)
        return
    if not bootstrap:
        raise ConsoleError("The MirrorMaker 2 connector names no bootstrap servers for this cluster.")
    gw = gateway.for_bootstrap(bootstrap)
    try:
        yield gw
    finally:
        gw.close()


# Measuring a flow --------------------------------------------------------------------------------

def measure(flow: Flow, groups: list[str] | None = None) -> FlowReport:
    """Lag per replicated topic and partition, the heartbeat's age and the groups' translated offsets."""
    report = FlowReport(flow=flow)
    with _gateway(flow.source_cluster, flow.source_bootstrap) as src, _gateway(flow.target_cluster, flow.target_bootstrap) as tgt:
        source_parts = _partitions(src, report, "source")
        target_parts = _partitions(tgt, report, "target")
        if source_parts is None or target_parts is None:
            return report
        report.topics = _lags(flow, src, tgt, source_parts, target_parts, report)
        if flow.heartbeats_topic in target_parts:
            newest = _newest(tgt, flow.heartbeats_topic, target_parts[flow.heartbeats_topic], report)
            if newest:
                report.heartbeat_age = max(0.0, time.time() - max(newest.values()) / 1000)
        if flow.checkpoints_topic in target_parts:
            report.groups = _group_offsets(flow, src, tgt, target_parts[flow.checkpoints_topic], groups, report)
    report.measured_at = time.time()
    return report


def _partitions(gw: ClusterGateway, report: FlowReport, which: str) -> dict[str, list[int]] | None:
    try:
        return {t.name: sorted(p.partition for p in t.partitions) for t in gw.metadata().topics if not t.error}
    except ConsoleError as exc:
        report.errors.append(f"The {which} cluster did not answer: {exc}")
        return None


def _lags(flow: Flow, src: ClusterGateway, tgt: ClusterGateway, source_parts: dict[str, list[int]],
          target_parts: dict[str, list[int]], report: FlowReport) -> list[TopicLag]:
    topics = sorted(t for t in source_parts if flow.replicates(t))
    asked = [(t, p) for t in topics for p in source_parts[t]]
    remote_asked = [(flow.remote_topic(t), p) for t in topics for p in target_parts.get(flow.remote_topic(t), [])]
    try:
        # The target first: a record copied between the two reads can only make the lag look larger, never negative.
        target_end = tgt.list_offsets(remote_asked, "latest")
        source_end = src.list_offsets(asked, "latest")
    except ConsoleError as exc:
        report.errors.append(f"End offsets could not be read: {exc}")
        return []
    lagging: list[tuple[str, int]] = []
    rows: dict[str, list[PartitionLag]] = {}
    for t, p in asked:
        s_end = source_end.get((t, p))
        if s_end is None:
            continue
        t_end = target_end.get((flow.remote_topic(t), p))
        records = max(0, s_end - (t_end or 0))
        if records and t_end is not None and len(lagging) < MAX_SECONDS_PARTITIONS:
            lagging.append((t, p))
        rows.setdefault(t, []).append(PartitionLag(p, s_end, t_end, records, None if records else 0.0))
    seconds = _lag_seconds(flow, src, tgt, lagging, report)
    return [TopicLag(t, flow.remote_topic(t), tuple(
        PartitionLag(r.partition, r.source_end, r.target_end, r.records, seconds.get((t, r.partition), r.seconds))
        for r in parts)) for t, parts in rows.items()]


def _lag_seconds(flow: Flow, src: ClusterGateway, tgt: ClusterGateway, lagging: list[tuple[str, int]],
                 report: FlowReport) -> dict[tuple[str, int], float]:
    """How far the target's newest record is behind the source's newest, per lagging partition."""
    by_topic: dict[str, list[int]] = {}
    for t, p in lagging:
        by_topic.setdefault(t, []).append(p)
    result: dict[tuple[str, int], float] = {}
    for topic, parts in by_topic.items():
        newest_source = _newest(src, topic, parts, report)
        newest_target = _newest(tgt, flow.remote_topic(topic), parts, report)
        for p in parts:
            if p in newest_source:
                behind = newest_source[p] - newest_target.get(p, newest_source[p])
                result[(topic, p)] = max(0.0, behind / 1000)
    return result


def _newest(gw: ClusterGateway, topic: str, parts: list[int], report: FlowReport) -> dict[int, int]:
    """The newest record's timestamp (ms) of each partition that has one."""
    try:
        records, _ = scan(gw, ScanSpec(topic=topic, partitions=tuple(parts), start="newest", newest_n=1, limit=len(parts)),
                          None, time_budget=SCAN_BUDGET)
    except ConsoleError as exc:
        report.errors.append(f"The newest records of '{topic}' could not be read: {exc}")
        return {}
    newest: dict[int, int] = {}
    for r in records:
        if r.timestamp_ms >= 0:
            newest[r.partition] = max(r.timestamp_ms, newest.get(r.partition, -1))
    return newest


def newest_checkpoints(gw: ClusterGateway, topic: str, parts: list[int], on_error: Callable[[str], None]) -> dict[
        tuple[str, str, int], Checkpoint]:
    """The newest checkpoint of each (group, remote topic, partition): the topic read newest first."""
    try:
        records, _ = scan(gw, ScanSpec(topic=topic, partitions=tuple(parts), start="newest", direction="backward",
                                       limit=MAX_LIMIT), None, time_budget=SCAN_BUDGET)
    except ConsoleError as exc:
        on_error(f"MM2's checkpoints in '{topic}' could not be read: {exc}")
        return {}
    found: dict[tuple[str, str, int], Checkpoint] = {}
    for r in records:
        try:
            c = decode_checkpoint(r.key, r.value)
        except Undecodable:
            continue
        found.setdefault((c.group, c.topic, c.partition), c)
    return found


def _group_offsets(flow: Flow, src: ClusterGateway, tgt: ClusterGateway, parts: list[int], wanted: list[str] | None,
                   report: FlowReport) -> list[GroupOffset]:
    checkpoints = newest_checkpoints(tgt, flow.checkpoints_topic, parts, report.errors.append)
    groups = sorted({g for g, _, _ in checkpoints} if wanted is None else set(wanted))
    try:
        on_source = src.group_offsets(groups)
        on_target = tgt.group_offsets(groups)
    except ConsoleError as exc:
        report.errors.append(f"The groups' committed offsets could not be read: {exc}")
        on_source, on_target = {}, {}
    prefix = "" if flow.identity else flow.source + flow.separator
    rows: dict[tuple[str, str, int], GroupOffset] = {}
    for (group, remote, p), c in checkpoints.items():
        if group not in groups:
            continue
        topic = remote.removeprefix(prefix)
        rows[(group, topic, p)] = GroupOffset(group, topic, p, on_source.get(group, {}).get((topic, p)), c,
                                              on_target.get(group, {}).get((remote, p)))
    for group in groups:  # a group committed on the source but not checkpointed yet
        for (topic, p), offset in on_source.get(group, {}).items():
            if flow.replicates(topic) and (group, topic, p) not in rows:
                rows[(group, topic, p)] = GroupOffset(group, topic, p, offset, None,
                                                      on_target.get(group, {}).get((flow.remote_topic(topic), p)))
    return [rows[k] for k in sorted(rows)]
