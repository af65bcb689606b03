"""The real watcher against bench/simulate.py's synthetic cluster: no Kafka, real Redis and database.

Read failures (errors, and metadata answers missing a random share of the topics) are injected; the
snapshot must never lose a topic to them nor report a deletion or a broker event the model never made,
while a topic really deleted is reported.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace
from typing import Any

import orjson
import pytest
from django.test import override_settings

from bench.simulate import SPURIOUS_KINDS, Model, SimGateway
from brokers_app.models import Event
from console.snapshots import changes, loader, store
from console.watcher.loop import ClusterWatcher
from console.watcher.size_columns import SizeColumns

pytestmark = pytest.mark.django_db


@pytest.fixture
def watcher(redis_server: str) -> Any:
    model = Model(partitions=600, groups=40, brokers=6, per_topic=20, seed=4)
    gw = SimGateway(model, failure_rate=0.0, seed=5)
    with override_settings(ANALYTICS_SAMPLES=False):
        w = ClusterWatcher("sim-test", "test", gw=gw)  # type: ignore[arg-type]
        w.cycle()
        w.sample_offsets()
        yield w, model, gw


def test_a_cycle_waits_for_the_step_of_a_merge_that_runs_and_a_pass_is_taken_in_as_a_merge(
        watcher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata cycle and the sampling thread's taking a pass in never run at once (turns.py)."""
    w, model, gw = watcher
    order: list[str] = []
    started = threading.Event()

    def merging() -> None:
        with w.turns.merge():
            started.set()
            time.sleep(0.3)
            order.append("step")

    t = threading.Thread(target=merging)
    t.start()
    started.wait(5)
    w.cycle()
    order.append("cycle")
    t.join(5)
    assert order == ["step", "cycle"]
    merged: list[bool] = []
    merge = w.merge

    def noted(sample: Any) -> None:
        merged.append(w.turns.merging)
        merge(sample)

    monkeypatch.setattr(w, "merge", noted)
    w.sample_offsets()
    assert merged == [True]


def test_a_thousand_cycles_with_failed_and_partial_reads_raise_no_spurious_events(watcher: Any) -> None:
    w, model, gw = watcher
    gw.failure_rate = 0.2
    rng = random.Random(6)
    for i in range(1000):
        model.step(0.01, 1.0)
        snap, _changes = w.cycle()
        if snap.reachable:
            # Never a partial snapshot: every topic of the model is there, whatever the answer held.
            assert snap.topics.keys() == model.topics.keys(), i
        if rng.random() < 0.2:
            w.sample_offsets()
    assert gw.failures.get("partial metadata", 0) > 50, gw.failures  # the test did inject partial answers
    kinds = list(Event.objects.filter(cluster="sim-test").values_list("kind", flat=True))
    assert not [k for k in kinds if k in SPURIOUS_KINDS], sorted(set(kinds))
    assert "leader_change" in kinds  # the real changes were seen


def test_a_topic_really_deleted_is_reported_once_kafka_says_so(watcher: Any) -> None:
    w, model, gw = watcher
    gone = model.names[3]
    with model.lock:
        del model.topics[gone]
        model.names.remove(gone)
    snap, changes = w.cycle()
    assert gone not in snap.topics
    assert [c.kind for c in changes if c.topic == gone] == ["topic_deleted"]


def test_a_topic_kafka_cannot_vouch_for_is_kept(watcher: Any) -> None:
    w, model, gw = watcher

    def cannot_tell(names: Any) -> dict[str, bool]:
        from console.gateway.errors import ClusterUnavailable

        raise ClusterUnavailable("describe timed out")

    hidden = model.names[5]
    real_metadata = gw.metadata

    def without_one() -> Any:
        from dataclasses import replace

        md = real_metadata()
        return replace(md, topics=tuple(t for t in md.topics if t.name != hidden))

    gw.metadata, gw.topics_exist = without_one, cannot_tell
    snap, changes = w.cycle()
    assert hidden in snap.topics
    assert not [c for c in changes if c.topic == hidden]


def _incremental_and_full(model: Model, seed: int) -> tuple[ClusterWatcher, ClusterWatcher]:
    """A watcher carrying unchanged topics over and one rebuilding every topic every cycle, on `model`."""
    return (ClusterWatcher(f"sim-inc-{seed}", "test", gw=SimGateway(model, 0.0)),  # type: ignore[arg-type]
            ClusterWatcher(f"sim-full-{seed}", "test", gw=SimGateway(model, 0.0), incremental=False))  # type: ignore[arg-type]


def _a_second_of(model: Model, rng: random.Random, clock: list[float], *watchers: ClusterWatcher) -> None:
    """A second goes by: the model changes, and the watchers sample it, each at random."""
    clock[0] += 1.0
    roll = rng.random()
    if roll < 0.5:
        model.step(rng.choice([0.0, 0.005, 0.05]), 1.0)
    if roll > 0.3:
        for w in watchers:
            w.sample_offsets()


def test_the_incremental_watcher_builds_what_the_full_rebuild_builds(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two watchers on the same synthetic cluster, one carrying unchanged topics over, one rebuilding
    every topic every cycle, see the same answers at the same (fake) times: their snapshots must be
    equal field by field, over random sequences of changes, samples, brokers leaving and coming
    back, and outages (cycles in which no broker answers: the incremental one carries topics over
    from the last state kept through them)."""
    import time as time_module

    clock = [1_800_000_000.0]
    monkeypatch.setattr(time_module, "time", lambda: clock[0])
    for seed in range(3):
        model = Model(partitions=400, groups=30, brokers=12, per_topic=4, seed=seed)  # (a topic on half the brokers)
        rng = random.Random(seed)
        with override_settings(ANALYTICS_SAMPLES=False):
            fast, full = _incremental_and_full(model, seed)
            reused = recovered = rejoined = 0
            down = False
            for i in range(40):
                _a_second_of(model, rng, clock, fast, full)
                if rng.random() < 0.15:  # (a broker leaves, or comes back)
                    broker = rng.randint(1, 12)
                    (model.broker_up if broker in model.down else model.broker_down)(broker)
                live_before = fast.previous.live_broker_ids() if fast.previous is not None and fast.previous.reachable else None
                was_down, down = down, rng.random() < 0.15
                for w in (fast, full):
                    w.gateway.failure_rate = 1.0 if down else 0.0  # type: ignore[attr-defined]
                a, _ = fast.cycle()
                b, _ = full.cycle()
                assert a.reachable is b.reachable is not down
                reused += 0 if fast.unchanged else fast.topics_reused
                recovered += fast.topics_reused if was_down and not down else 0
                rejoined += fast.topics_reused if live_before is not None and not down and a.live_broker_ids() != live_before else 0
                if down:
                    # (the groups last shown: sampled in a thread, as here, the incremental
                    # watcher's group states live on and a pass taken since renews their
                    # evaluation in place, the full one's are new each pass; the next reachable
                    # cycle shows that pass in both)
                    a, b = replace(a, groups={}), replace(b, groups={})
                assert a.content_bytes().replace(b"sim-inc-", b"sim-x-") == b.content_bytes().replace(b"sim-full-", b"sim-x-"), (seed, i)
                assert (a.offsets_at, a.groups_at) == (b.offsets_at, b.groups_at), (seed, i)
                # What the incremental watcher stored (assembled from its per-topic JSON cache) is
                # that snapshot too.
                stored = loader.load(f"sim-inc-{seed}")
                assert stored is not None and replace(stored, groups={} if down else stored.groups).content_bytes() == a.content_bytes(), (seed, i)
            assert reused > 100, reused  # the incremental path did carry topics over
            assert recovered > 0, recovered  # (after outages too)
            assert rejoined > 0, rejoined  # (and in a cycle whose live brokers changed: those without a replica there)


def test_a_sample_that_changed_more_topics_than_a_cycle_takes_goes_in_over_the_next_cycles(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With WATCHER_CYCLE_SAMPLED_TOPICS below what a sample changes, a cycle puts only that many
    carried topics' new offsets in its snapshot and the next cycles the rest, those left longest
    first: each topic is then either as the full rebuild has it or as it was (never half of one),
    the snapshot's offsets time stays that of the last sample put in whole until every topic has
    it (what read-your-writes waits on), and the next cycles reach what the full rebuild built
    without a new sample. Topics whose metadata changed have their latest offsets at once."""
    import time as time_module

    clock = [1_800_000_000.0]
    monkeypatch.setattr(time_module, "time", lambda: clock[0])
    limit = 7
    spread = 0
    for seed in range(3):
        model = Model(partitions=400, groups=30, brokers=5, per_topic=10, seed=seed)  # (40 topics)
        rng = random.Random(seed)
        with override_settings(ANALYTICS_SAMPLES=False, WATCHER_CYCLE_SAMPLED_TOPICS=limit):
            fast, full = _incremental_and_full(model, seed)
            last = None
            for i in range(30):
                _a_second_of(model, rng, clock, fast, full)
                b, _ = full.cycle()
                for extra in range(40 // limit + 2):
                    a, _ = fast.cycle()
                    for name, t in a.topics.items():
                        assert t == b.topics[name] or (last is not None and t is last.topics.get(name)), (seed, i, extra, name)
                    if extra and last is not None:  # (nothing changed since the last cycle but what it left)
                        assert sum(t is not last.topics.get(n) for n, t in a.topics.items()) <= limit, (seed, i, extra)
                    last = a
                    if a.offsets_at == b.offsets_at:
                        break
                    assert a.offsets_at is None or a.offsets_at < (b.offsets_at or 0), (seed, i, extra)  # (not the newer one yet)
                    spread += 1
                else:
                    raise AssertionError(f"{seed} {i}: the offsets never all went in")
                assert a.content_bytes().replace(b"sim-inc-", b"sim-x-") == b.content_bytes().replace(b"sim-full-", b"sim-x-"), (seed, i)
    assert spread > 10, spread  # (samples did change more topics than a cycle takes)


def test_topics_left_for_later_cycles_go_in_in_turn_while_every_sample_changes_every_topic(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every topic's offsets move before every cycle, 40 topics, 7 a cycle: those left waiting go
    first, so each topic's new offsets go in at least once every ceil(40 / 7) cycles (taken in
    the order the topics come, the same seven would go in every time and the rest never)."""
    import time as time_module

    clock = [1_800_000_000.0]
    monkeypatch.setattr(time_module, "time", lambda: clock[0])
    limit, cycles = 7, 24
    model = Model(partitions=400, groups=10, brokers=5, per_topic=10, seed=9)
    with override_settings(ANALYTICS_SAMPLES=False, WATCHER_CYCLE_SAMPLED_TOPICS=limit):
        w = ClusterWatcher("sim-turns", "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
        w.cycle()
        w.sample_offsets()
        last, _ = w.cycle()
        went_in: dict[str, list[int]] = {name: [] for name in last.topics}
        for i in range(cycles):
            clock[0] += 1.0
            with model.lock:  # (offsets only: no topic's metadata changes)
                for parts in model.topics.values():
                    parts[0][4] += 1
            w.sample_offsets()
            snap, _ = w.cycle()
            moved = [name for name, t in snap.topics.items() if t is not last.topics[name]]
            assert len(moved) == limit, (i, len(moved))
            for name in moved:
                went_in[name].append(i)
            last = snap
    turn = -(-len(went_in) // limit)
    for name, at in went_in.items():
        gaps = [b - a for a, b in zip([-1, *at], [*at, cycles], strict=True)]
        assert max(gaps) <= turn, (name, at)


def test_a_cycle_publishes_its_snapshot_before_writing_its_events_and_then_announces_them(
        watcher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 300,000 partitions a cycle's events took 0.4 s to write: the snapshot goes out first, and
    the events follow (made by the diff only then), saved (with their ids), in an events.added
    message of their own."""
    from console import realtime

    w, model, _gw = watcher
    order: list[str] = []
    sent: list[dict[str, Any]] = []
    publish, record = w.publisher.publish, w.publisher.record
    def noted(name: str, call: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            order.append(name)
            return call(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(w.publisher, "publish", noted("publish", publish))
    monkeypatch.setattr(w.publisher, "record", noted("record", record))
    from console.watcher import loop
    monkeypatch.setattr(loop, "diff", noted("diff", loop.diff))  # (the events are made once the snapshot is out)

    class Layer:
        async def group_send(self, group: str, message: dict[str, Any]) -> None:
            order.append(message["type"])
            sent.append(message)

    monkeypatch.setattr(realtime, "get_channel_layer", lambda: Layer())
    name = model.names[0]
    with model.lock:
        part = model.topics[name][0]
        part[0] = next(r for r in part[2] if r != part[0])  # a leader move
        model.topic_versions[name] = model.version = model.version + 1
    before = Event.objects.filter(cluster="sim-test").count()
    published_before = w.published_at
    w.cycle()
    assert order == ["publish", "cluster.update", "diff", "record", "events.added"], order
    assert w.published_at is not None and w.published_at != published_before
    update, added = sent
    assert update["changed"] and update["events"] == []
    saved = Event.objects.filter(cluster="sim-test").order_by("id")[before:]
    assert [e["id"] for e in added["events"]] == [e.id for e in saved]
    assert any(e["kind"] == "leader_change" and e["topic"] == name for e in added["events"])


def test_events_the_database_refuses_are_saved_with_the_next_cycle_and_the_version_moves_on(
        watcher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot goes out before its events are written: a database that refuses them must
    neither lose them nor make the next cycle publish the same version number again."""
    from console.watcher import registry

    w, model, _gw = watcher
    events = registry.events()
    save = events.save
    refuse = [True]

    def flaky(rows: Any) -> Any:
        if refuse[0]:
            raise RuntimeError("database is down")
        return save(rows)

    monkeypatch.setattr(events, "save", flaky)

    def move(index: int) -> str:
        name = model.names[index]
        with model.lock:
            part = model.topics[name][0]
            part[0] = next(r for r in part[2] if r != part[0])
            model.topic_versions[name] = model.version = model.version + 1
        return name

    before = Event.objects.filter(cluster="sim-test", kind="leader_change").count()
    first = move(1)
    snap, _ = w.cycle()  # no exception: published, events kept
    version = snap.version
    assert loader.load("sim-test").version == version  # type: ignore[union-attr]
    second = move(2)
    snap, _ = w.cycle()  # refused again: both kept
    assert snap.version == version + 1
    refuse[0] = False
    snap, _ = w.cycle()
    topics = list(Event.objects.filter(cluster="sim-test", kind="leader_change").order_by("id")
                  .values_list("topic", flat=True))[before:]
    assert topics == [first, second]


def test_a_partitions_replica_sizes_are_by_broker_in_broker_order_and_its_size_its_leaders(watcher: Any) -> None:
    """Each partition's replica sizes, by broker key and in broker order, are the sample's (which
    keeps them as arrays, columns.SizeColumns: the snapshot holds the only mapping per partition),
    and its size is its leader's."""
    w, model, gw = watcher
    taken: list[Any] = []
    merge = w.merge

    def merging(sample: Any) -> None:
        taken.append(sample)
        merge(sample)

    w.merge = merging
    w.sampler._next_sizes = 0.0  # (sizes are read again at this pass)
    w.sample_offsets()
    snap, _ = w.cycle()
    sample = taken[-1]
    assert isinstance(sample.sizes, SizeColumns) and sample.sizes
    answered = gw.log_dir_sizes([b.id for b in model.brokers])
    for t in snap.topics.values():
        for p in t.partitions:
            held = p.replica_sizes
            assert held == sample.sizes[(t.name, p.partition)]
            assert list(held.items()) == [(str(b), n) for b, n in sorted(answered[(t.name, p.partition)].items())]
            assert p.size == held.get(str(p.leader), max(held.values()))


def test_a_partitions_lists_are_shared_where_they_are_equal(watcher: Any) -> None:
    """The ISR is the replicas' list when it is the replicas in their order, and no offline replica
    is one list for all partitions: 40 MB of lists at 300,000 partitions. The snapshot's JSON is
    what the lists say."""
    w, model, gw = watcher
    model.step(0.05, 1.0)  # some ISRs shrink
    snap, _ = w.cycle()
    parts = [p for t in snap.topics.values() for p in t.partitions]
    same = [p for p in parts if p.isr == p.replicas]
    assert same and all(p.isr is p.replicas for p in same)
    assert any(p.isr != p.replicas and p.isr is not p.replicas for p in parts)
    empty = {id(p.offline_replicas) for p in parts if not p.offline_replicas}
    assert len(empty) == 1
    shown = {(t["name"], p["partition"]): p for t in orjson.loads(snap.content_bytes())["topics"].values() for p in t["partitions"]}
    for t in snap.topics.values():
        for p in t.partitions:
            seen = shown[(t.name, p.partition)]
            assert (seen["replicas"], seen["isr"], seen["offline_replicas"]) == (p.replicas, p.isr, p.offline_replicas)


def test_what_to_sample_is_each_topics_online_partition_numbers_not_a_tuple_per_partition(watcher: Any) -> None:
    """The watcher holds (and sends its sampling process) each topic's online partition numbers: a
    (topic, partition) tuple per partition was 20 MB of it at 300,000 partitions."""
    import pickle

    from console.watcher.sample import Layout

    w, model, gw = watcher
    snap = w.previous
    layout = w._partitions(snap)
    assert isinstance(layout, Layout) and len(layout) == 600
    assert list(layout) == [(t.name, p.partition) for t in snap.topics.values() for p in t.partitions]
    assert all(type(numbers) is tuple and all(type(n) is int for n in numbers) for _name, numbers in layout.topics)
    assert w._partitions(snap) is layout  # the same topics: the same layout, nothing to send
    assert pickle.loads(pickle.dumps(layout)) == layout
    # A leader moves (the same partitions online): the numbers of every topic are kept as they were.
    first = model.names[0]
    with model.lock:
        leader, replicas, isr, _s, _e = model.topics[first][3]
        model.topics[first][3][0] = next(r for r in isr if r != leader)
        model.topic_versions[first] = model.version = model.version + 1
    moved, _ = w.cycle()
    assert moved.topics is not snap.topics
    again = w._partitions(moved)
    assert again == layout and all(a[1] is b[1] for a, b in zip(again.topics, layout.topics, strict=True))
    # A partition goes offline: it leaves its topic's numbers.
    with model.lock:
        model.topics[first][5][0] = -1
        model.topic_versions[first] = model.version = model.version + 1
    offline, _ = w.cycle()
    assert offline.topics[first].partitions[5].offline
    fewer = w._partitions(offline)
    assert len(fewer) == 599 and (first, 5) not in list(fewer) and dict(fewer.topics)[first] == tuple(p for p in range(20) if p != 5)


def test_a_cycle_that_rebuilds_topics_holds_no_second_copy_of_their_last_json(watcher: Any,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """While a cycle serialises a changed topic, its last JSON is held by nothing but the entry being
    replaced: not by the last content, nor by what the store compares with (it keeps digests). At
    300,000 partitions a size read changes every topic, and both copies were 60 MB more. What is
    stored after is still exactly the snapshot (only the changed topics were written)."""
    import sys

    from console.snapshots.part_cache import TopicBytes

    w, model, gw = watcher
    held: list[int] = []
    entry = TopicBytes._entry

    def watched(self: TopicBytes, obj: Any, last: Any) -> Any:
        if last is not None:
            # (the dicts that held it are not seen by gc.get_referrers: a dict of bytes is not tracked)
            held.append(sys.getrefcount(last[1]) - 2)  # (less getrefcount's argument and the entry)
        return entry(self, obj, last)

    monkeypatch.setattr(TopicBytes, "_entry", watched)
    before = store.client().hgetall("console:snapshot:sim-test:parts")
    model.step(0.05, 1.0)
    w.sample_offsets()
    snap, _ = w.cycle()
    assert len(held) > 5  # (topics were rebuilt)
    assert held == [0] * len(held), held[:5]
    assert w.publisher._stored is not None and all(isinstance(d, int) for d in w.publisher._stored.digests.values())
    loader._cache.pop("sim-test", None)  # (read as a process that never saw it: other tests' watchers were "sim-test" too)
    loader._raw_parts.pop("sim-test", None)
    stored = loader.load("sim-test")
    assert stored is not None and stored.content_bytes() == snap.content_bytes()
    after = store.client().hgetall("console:snapshot:sim-test:parts")
    record = orjson.loads(store.client().get("console:snapshot:sim-test:changed") or b"{}")
    assert record["changed"] and set(record["changed"]) == {n.decode() for n, raw in after.items() if before.get(n) != raw}


def test_a_pass_changing_many_topics_goes_in_over_half_the_time_to_the_next_unless_a_request_waits_for_it(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Passes 10 s apart, one cycle a second, every topic's offsets moved by each pass: a pass's
    40 topics go in 8 a cycle over 5 cycles (half the time to the next pass; sampled_share.SampledShare),
    the snapshot's offsets time moving only once all are in. With a change made through the
    console waiting for its offsets (read-your-writes), the next pass goes in at once."""
    import time as time_module

    from console.watcher import sampled_share

    clock = [1_800_000_000.0]
    monkeypatch.setattr(time_module, "time", lambda: clock[0])
    monkeypatch.setattr(sampled_share, "SPREAD_FLOOR", 4)
    model = Model(partitions=400, groups=10, brokers=5, per_topic=10, seed=9)  # (40 topics)
    with override_settings(ANALYTICS_SAMPLES=False, WATCHER_CYCLE_SAMPLED_TOPICS=40, WATCHER_METADATA_INTERVAL=1.0):
        w = ClusterWatcher("sim-spread", "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
        w.sampled_share = sampled_share.SampledShare(clock=lambda: clock[0])
        w.cycle()
        w.sample_offsets()
        last, _ = w.cycle()

        def a_pass() -> float:
            clock[0] += 10.0
            with model.lock:  # (offsets only: no topic's metadata changes)
                for parts in model.topics.values():
                    parts[0][4] += 1
            w.sample_offsets()
            return clock[0]

        for _ in range(2):
            before, started = last.offsets_at, a_pass()
            counts, stamps = [], []
            for _ in range(7):
                snap, _ = w.cycle()
                counts.append(sum(t is not last.topics[name] for name, t in snap.topics.items()))
                stamps.append(snap.offsets_at)
                last = snap
            assert counts == [8, 8, 8, 8, 8, 0, 0], counts
            assert stamps == [before] * 4 + [started] * 3, (stamps, before, started)
            assert all(p.end_offset == model.topics[name][p.partition][4] for name, t in last.topics.items() for p in t.partitions)

        started = a_pass()
        changes.note_change("sim-spread", {f"offsets:{model.names[0]}": 1})  # (as the pass it nudged ends)
        snap, _ = w.cycle()
        assert sum(t is not last.topics[name] for name, t in snap.topics.items()) == 40
        assert snap.offsets_at == started


def test_a_cycle_says_whether_its_metadata_moved_and_the_watcher_comes_back_sooner_after_one(watcher: Any) -> None:
    """After a cycle whose metadata moved the runner waits WATCHER_BUSY_INTERVAL, not the whole
    WATCHER_METADATA_INTERVAL (runner.cycle_delay): offsets moving alone, or nothing, is quiet."""
    w, model, _gw = watcher
    w.cycle()
    assert not w.metadata_moved  # (nothing changed since the fixture's cycle)
    model.step(0.01, 1.0)  # (6 partitions: leaders moved, ISRs shrunk or grown back; their end offsets moved)
    w.cycle()
    assert w.metadata_moved
    w.cycle()
    assert not w.metadata_moved
    version = w.previous.version
    w.sample_offsets()
    snap, _ = w.cycle()
    assert snap.version == version + 1 and not w.metadata_moved  # (a new version: the offsets, not the metadata)


def test_a_cycle_counts_the_topics_it_serialised_and_of_their_partitions_those_it_wrote_anew(watcher: Any) -> None:
    """What bench.simulate and bench.cycle_cost report a cycle to have serialised: the topics it
    built (their metadata changed) and, of their partitions, only the changed ones (the others'
    JSON is copied); a cycle that changed nothing serialised none."""
    w, model, _gw = watcher
    w.cycle()  # (the fixture's first pass taken in: every partition's offsets)
    assert (w.topics_serialised, w.partitions_serialised) == (30, 600)
    w.cycle()
    assert (w.topics_serialised, w.partitions_serialised) == (0, 0)
    before = w.previous
    model.step(0.0, 0.0, 7)
    snap, _ = w.cycle()
    changed = {name: [i for i, (p, q) in enumerate(zip(before.topics[name].partitions, t.partitions, strict=True)) if p != q]
               for name, t in snap.topics.items() if t is not before.topics[name]}
    assert w.topics_serialised == len(changed) == len(snap.topics) - w.topics_reused > 0
    assert w.partitions_serialised == sum(len(places) for places in changed.values()) <= 7
    w.cycle()
    assert (w.topics_serialised, w.partitions_serialised) == (0, 0)


def test_while_no_broker_answers_the_last_state_is_kept_as_it_was_not_copied_and_nothing_is_serialised_again(watcher: Any) -> None:
    """A cycle of an outage shows the last snapshot's state marked unreachable: its topics and
    brokers are the last snapshot's objects (a copy through JSON cost 3.6 s a cycle at 300,000
    partitions, everything serialised again, and held a second set of states), the last snapshot
    is left as it was, and what is stored says unreachable with every topic."""
    w, model, gw = watcher
    w.cycle()
    last, _ = w.cycle()
    assert last.reachable
    gw.failure_rate = 1.0  # (every call fails)
    snap, changes = w.cycle()
    assert [c.kind for c in changes] == ["cluster_unreachable"]
    for _ in range(3):
        assert not snap.reachable and "simulated failure" in (snap.error or "")
        assert snap.topics.keys() == last.topics.keys() and all(snap.topics[n] is t for n, t in last.topics.items())
        assert snap.brokers == last.brokers and all(snap.brokers[b] is s for b, s in last.brokers.items())
        assert (w.topics_serialised, w.partitions_serialised) == (0, 0)
        stored = loader.load("sim-test")
        assert stored is not None and not stored.reachable and stored.topics.keys() == last.topics.keys()
        snap, changes = w.cycle()
        assert changes == []
    assert last.reachable and last.error is None
    gw.failure_rate = 0.0
    model.step(0.0, 0.0, 5)
    snap, changes = w.cycle()
    assert snap.reachable and "cluster_reachable" in [c.kind for c in changes]
    assert snap.topics.keys() == model.topics.keys()
    assert {name: [p.leader for p in t.partitions] for name, t in snap.topics.items()} == \
        {name: [v[0] for v in parts] for name, parts in model.topics.items()}
    assert not [c for c in changes if c.kind in SPURIOUS_KINDS]


def test_a_slow_cycle_is_logged_but_not_each_cycle_of_an_outage(watcher: Any, monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """Each cycle of an outage waits out the request timeout (5 s with the local cluster): logging
    each as slow wrote a warning every 5 s for as long as the outage lasted (the event says it once)."""
    import logging

    from console.watcher import loop

    w, _model, gw = watcher
    monkeypatch.setattr(loop, "SLOW_CYCLE_LOGGED", 0.0)
    with caplog.at_level(logging.WARNING, logger="console.watcher.loop"):
        w.cycle()
        assert [r for r in caplog.records if "a cycle of sim-test took" in r.getMessage()]
        caplog.clear()
        gw.failure_rate = 1.0
        for _ in range(3):
            assert not w.cycle()[0].reachable
        assert not [r for r in caplog.records if "a cycle of sim-test took" in r.getMessage()]
