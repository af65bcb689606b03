"""ClusterWatcher.poll: a cycle whose inputs did not change reuses the last snapshot's content."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from console.gateway.errors import ClusterUnavailable, GatewayError
from console.gateway.types import Broker, ClusterMetadata, Partition, Quorum, QuorumReplica, Topic
from console.watcher.loop import ClusterWatcher
from console.watcher.sample import Sample
from console.watcher.side_read import SIDE_READ_WAIT, SideRead


def metadata(isr: tuple[int, ...] = (1, 2)) -> ClusterMetadata:
    return ClusterMetadata("cid", (Broker(1, "h1", 9092, "r1"), Broker(2, "h2", 9094, "r2")),
                           (Topic("orders", False, (Partition("orders", 0, 1, (1, 2), isr),)),))


def quorum(leader: int = 1) -> Quorum:
    voters = tuple(QuorumReplica(i, 10, 0, 0) for i in (1, 2))
    return Quorum(leader, 3, 10, voters, ())


class FakeGateway:
    def __init__(self) -> None:
        self.md = metadata()
        self.q = quorum()
        self.ports: dict[tuple[str, int], str] = {}  # a broker's address -> what probing its port answers (default accepted)

    def metadata(self) -> ClusterMetadata:
        return self.md

    def quorum(self) -> Quorum:
        return self.q

    def broker_racks(self) -> dict[int, str | None]:
        return {1: "r1", 2: "r2"}

    def topic_configs(self, topics: Any, keys: Any = None) -> dict[str, dict[str, str]]:
        return {t: {"min.insync.replicas": "2"} for t in topics}

    def probe_brokers(self, addresses: Any) -> dict[tuple[str, int], str]:
        return {a: self.ports.get(a, "accepted") for a in addresses}


@pytest.fixture
def watcher(settings: Any) -> ClusterWatcher:
    w = ClusterWatcher("local", "test")
    w.gateway = FakeGateway()  # type: ignore[assignment]
    return w


def step(w: ClusterWatcher, now: float) -> Any:
    snap = w.poll(now)
    w.previous = snap
    return snap


def test_unchanged_metadata_and_no_new_sample_reuse_the_content_with_a_new_stamp(watcher: ClusterWatcher) -> None:
    step(watcher, 100.0)
    assert not watcher.unchanged
    second = step(watcher, 101.0)  # the first poll read min ISR: that was new input
    third = step(watcher, 102.0)
    assert watcher.unchanged
    assert third.topics is second.topics and third.taken_at == 102.0 and third.checked_at == 102.0
    assert third.content_bytes() == second.content_bytes()
    assert third.topics["orders"].min_isr == 2


def test_changed_metadata_a_new_sample_or_a_new_controller_rebuild_the_snapshot(watcher: ClusterWatcher) -> None:
    step(watcher, 100.0)
    step(watcher, 101.0)
    step(watcher, 102.0)
    assert watcher.unchanged
    watcher.gateway.md = metadata(isr=(1,))  # type: ignore[attr-defined]
    snap = step(watcher, 103.0)
    assert not watcher.unchanged and snap.topics["orders"].partitions[0].isr == [1]
    step(watcher, 104.0)
    assert watcher.unchanged
    # What the sampling thread hands over: a sample in which one end offset moved.
    watcher.merge(Sample(started=104.5, ends={("orders", 0): 42}, starts={}, sizes=None, rates={}, groups=None,
                         groups_changed=False, changed=(("orders", 0),)))
    snap = step(watcher, 105.0)
    assert not watcher.unchanged and snap.topics["orders"].partitions[0].end_offset == 42
    watcher.gateway.q = quorum(leader=2)  # type: ignore[attr-defined]
    snap = step(watcher, 106.0)
    assert not watcher.unchanged and snap.controller_id == 2


def test_a_cycle_after_the_cluster_was_unreachable_is_rebuilt(watcher: ClusterWatcher) -> None:
    from console.gateway.errors import ClusterUnavailable

    step(watcher, 100.0)
    step(watcher, 101.0)

    def down() -> ClusterMetadata:
        raise ClusterUnavailable("no broker answered")

    good = watcher.gateway.metadata  # type: ignore[attr-defined]
    watcher.gateway.metadata = down  # type: ignore[method-assign]
    snap = step(watcher, 102.0)
    assert not snap.reachable and not watcher.unchanged
    watcher.gateway.metadata = good  # type: ignore[method-assign]
    snap = step(watcher, 103.0)
    assert snap.reachable and not watcher.unchanged


def test_the_consoles_own_samples_topic_alone_makes_a_snapshot_only_every_interval(watcher: ClusterWatcher, settings: Any) -> None:
    """Its offsets move at every sample (the console writes them): on an otherwise idle cluster that
    alone makes a new snapshot only every WATCHER_OWN_TOPIC_INTERVAL seconds; its changes wait."""
    settings.ANALYTICS_SAMPLES, settings.ANALYTICS_SAMPLES_TOPIC, settings.WATCHER_OWN_TOPIC_INTERVAL = True, "orders", 30.0

    def sample(at: float, end: int) -> Sample:
        return Sample(started=at, ends={("orders", 0): end}, starts={}, sizes=None, rates={}, groups=None,
                      groups_changed=False, changed=(("orders", 0),))

    for now in (100.0, 101.0, 102.0):
        step(watcher, now)
    assert watcher.unchanged
    watcher.merge(sample(102.5, 42))  # the first: at once
    assert step(watcher, 103.0).topics["orders"].partitions[0].end_offset == 42
    watcher.merge(sample(105.5, 43))  # 3 s later: waits
    snap = step(watcher, 106.0)
    assert watcher.unchanged and snap.topics["orders"].partitions[0].end_offset == 42
    watcher.merge(sample(133.0, 44))  # 30 s after the last: in
    assert step(watcher, 134.0).topics["orders"].partitions[0].end_offset == 44
    # Any other topic's change takes it along at once; so does the samples topic when it is not the console's.
    settings.ANALYTICS_SAMPLES = False
    watcher.merge(sample(135.0, 45))
    assert step(watcher, 136.0).topics["orders"].partitions[0].end_offset == 45


class SlowSideReads(FakeGateway):
    """The quorum and racks reads hang until released (as after a controller's SIGKILL or a broker's
    restart, when they took 2 and 5 s on the test cluster)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.racks = {1: "r1", 2: "r2"}

    def quorum(self) -> Quorum:
        self.release.wait(30)
        return self.q

    def broker_racks(self) -> dict[int, str | None]:
        self.release.wait(30)
        return dict(self.racks)


def test_a_slow_quorum_or_racks_read_does_not_hold_back_the_metadata_a_cycle_read(watcher: ClusterWatcher) -> None:
    gw = SlowSideReads()
    watcher.gateway = gw  # type: ignore[assignment]
    gw.release.set()
    step(watcher, 100.0)
    step(watcher, 101.0)
    gw.release.clear()
    # Broker 2 leaves and a third one, never seen, comes; the controller moves: the reads hang.
    gw.md = ClusterMetadata("cid", (Broker(1, "h1", 9092, "r1"), Broker(3, "h3", 9096, None)), gw.md.topics)
    gw.q = quorum(leader=2)
    started = time.monotonic()
    snap = step(watcher, 102.0)
    took = time.monotonic() - started
    assert took < SIDE_READ_WAIT * 2 + 1.0, took  # (a side read is waited for at most SIDE_READ_WAIT each)
    assert {b.id: b.up for b in snap.brokers.values()} == {1: True, 2: False, 3: True}
    assert snap.controller_id == 1 and snap.quorum.leader_id == 1  # the last known, until the answer comes
    assert snap.brokers[3].rack is None
    started = time.monotonic()
    snap = step(watcher, 103.0)  # still out: the next cycle is not held back either, nor starts another
    assert time.monotonic() - started < SIDE_READ_WAIT + 1.0
    assert snap.controller_id == 1
    gw.racks[3] = "r3"
    gw.release.set()
    snap = step(watcher, 104.0)  # the answers came: taken in
    assert snap.controller_id == 2 and snap.quorum.leader_id == 2 and snap.quorum_error is None
    assert snap.brokers[3].rack == "r3"


class FailingQuorum(FakeGateway):
    def quorum(self) -> Quorum:
        raise ClusterUnavailable("Cluster 'local' could not describe its quorum.")


def test_a_failed_side_read_keeps_the_last_quorum_and_says_why(watcher: ClusterWatcher) -> None:
    step(watcher, 100.0)
    watcher.gateway = FailingQuorum()  # type: ignore[assignment]
    snap = step(watcher, 101.0)
    assert snap.quorum_error == "Cluster 'local' could not describe its quorum."
    assert snap.controller_id == 1 and snap.quorum.leader_id == 1


def test_a_side_read_runs_once_at_a_time_and_gives_its_answer_once() -> None:
    release, calls = threading.Event(), []

    def read() -> int:
        calls.append(1)
        release.wait(10)
        return len(calls)

    side = SideRead("test", read)
    assert side.take(0.1) is None  # (none started)
    assert side.start() and not side.start()
    assert side.take(0.2) is None  # not come yet
    release.set()
    assert side.take(5) == (1, None)
    assert side.take(0.1) is None  # taken
    assert side.start() and side.take(5) == (2, None) and len(calls) == 2

    def broken() -> int:
        raise KeyError("x")

    side = SideRead("broken", broken)
    side.start()
    answer = side.take(5)
    assert answer is not None
    value, error = answer
    assert value is None and isinstance(error, GatewayError) and "broken" in error.message
    assert side.start()  # (not left out for ever)


class NewTopicConfigs(FakeGateway):
    """describe-configs of new topics hangs until released, or fails while `failing` (as when a
    broker it asks is down: it waited its whole timeout inside the cycle)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.release.set()
        self.failing = False
        self.config_reads: list[list[str]] = []
        self.rack_reads = 0

    def topic_configs(self, topics: Any, keys: Any = None) -> dict[str, dict[str, str]]:
        self.config_reads.append(sorted(topics))
        self.release.wait(30)
        if self.failing:
            raise ClusterUnavailable("Cluster 'local' could not describe the topics' configs.")
        return {t: {"min.insync.replicas": "2"} for t in topics}

    def broker_racks(self) -> dict[int, str | None]:
        self.rack_reads += 1
        if self.failing:
            raise ClusterUnavailable("Cluster 'local' could not describe itself.")
        return {b.id: b.rack for b in self.md.brokers}

    def add_topic(self, name: str) -> None:
        self.md = ClusterMetadata("cid", self.md.brokers,
                                  (*self.md.topics, Topic(name, False, (Partition(name, 0, 1, (1, 2), (1, 2)),))))


def test_a_slow_min_isr_read_of_new_topics_does_not_hold_back_the_metadata(watcher: ClusterWatcher) -> None:
    gw = NewTopicConfigs()
    watcher.gateway = gw  # type: ignore[assignment]
    step(watcher, 100.0)
    assert step(watcher, 101.0).topics["orders"].min_isr == 2
    gw.release.clear()
    gw.add_topic("payments")
    started = time.monotonic()
    snap = step(watcher, 102.0)
    assert time.monotonic() - started < SIDE_READ_WAIT + 1.0
    assert "payments" in snap.topics and snap.topics["payments"].min_isr is None  # shown at once, its min ISR not yet known
    gw.add_topic("refunds")  # while the first read is out: no second one
    snap = step(watcher, 103.0)
    assert "refunds" in snap.topics and gw.config_reads == [["orders"], ["payments"]]
    gw.release.set()
    time.sleep(0.2)
    snap = step(watcher, 104.0)  # the answer is taken in
    assert snap.topics["payments"].min_isr == 2
    assert step(watcher, 105.0).topics["refunds"].min_isr == 2  # the next new topic asked about
    assert gw.config_reads[-1] == ["refunds"]


def test_failed_side_reads_are_started_again_only_after_a_pause(watcher: ClusterWatcher) -> None:
    gw = NewTopicConfigs()
    watcher.gateway = gw  # type: ignore[assignment]
    step(watcher, 100.0)
    gw.failing = True
    reads, racks = len(gw.config_reads), gw.rack_reads
    gw.add_topic("payments")
    # A third broker (its rack not known) and a new topic: each read fails once, and is not started
    # again by every cycle.
    gw.md = ClusterMetadata("cid", (*gw.md.brokers, Broker(3, "h3", 9096, None)), gw.md.topics)
    for now in (101.0, 101.5, 102.0, 103.0, 104.0, 105.0):
        snap = step(watcher, now)
        time.sleep(0.05)
    assert snap.topics["payments"].min_isr is None and snap.brokers[3].rack is None
    assert len(gw.config_reads) - reads == 1 and gw.rack_reads - racks == 1
    gw.failing = False
    step(watcher, 106.5)  # SIDE_READ_RETRY after the failures: asked again
    snap = step(watcher, 107.0)
    assert len(gw.config_reads) - reads == 2 and gw.rack_reads - racks == 2
    assert snap.topics["payments"].min_isr == 2


def test_the_partitions_to_sample_are_each_snapshots_online_ones_and_the_same_list_while_those_stay(watcher: ClusterWatcher) -> None:
    """`ClusterWatcher._partitions` (what the sampling process is told to read) over random
    sequences of snapshots: each topic's online partitions in order, as a full walk lists them;
    the same Layout object (nothing sent) while no topic's partitions, or which are online, changed."""
    import random
    from dataclasses import replace

    from console.snapshots.model import PartitionState, Snapshot, TopicState

    rng = random.Random(5)

    def full(snap: Snapshot) -> list[tuple[str, tuple[int, ...]]]:
        return [(name, tuple(p.partition for p in t.partitions if not p.offline)) for name, t in snap.topics.items()]

    topics = {f"t{i}": TopicState(f"t{i}", False, [PartitionState(n, 1 + n % 3, [1, 2, 3], [1, 2, 3], []) for n in range(4)])
              for i in range(6)}

    def numbers(snap: Snapshot) -> dict[str, tuple[int, ...]]:
        return {name: tuple(p.partition for p in t.partitions) for name, t in snap.topics.items()}

    kept = moved = 0
    layout, seen = None, None
    for _ in range(400):
        topics = dict(topics)
        for name in rng.sample(sorted(topics), min(len(topics), rng.randint(0, 3))):
            parts = list(topics[name].partitions)
            roll = rng.random()
            if roll < 0.1 and len(parts) > 1:
                parts.pop(rng.randrange(len(parts)))  # (a partition gone: its number with it)
            elif roll < 0.2:
                parts.append(PartitionState(len(parts) + 10, rng.choice([-1, 2]), [1, 2, 3], [1, 2, 3], []))
            else:
                i = rng.randrange(len(parts))
                parts[i] = replace(parts[i], leader=rng.choice([-1, 1, 2, 3]))  # (a leader moved, lost or back)
            topics[name] = replace(topics[name], partitions=parts)
        if rng.random() < 0.05 and len(topics) > 3:
            topics.pop(rng.choice(sorted(topics)))
        if rng.random() < 0.05:
            name = f"n{rng.randrange(1000)}"
            topics[name] = TopicState(name, False, [PartitionState(0, -1, [1], [], [])])
        snap = Snapshot(cluster="local", reachable=True, topics=topics)
        before, seen_before = layout, seen
        layout, seen = watcher._partitions(snap), numbers(snap)
        assert layout.topics == full(snap)
        if before is not None and before.topics == layout.topics and seen_before == seen:
            assert layout is before  # (nothing changed that it lists: the same list, nothing to send)
            kept += 1
        else:
            moved += 1
    assert kept > 50 and moved > 50
