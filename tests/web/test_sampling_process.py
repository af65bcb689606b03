"""The sampling pass in a process of its own (console/watcher/sampling_process.py).

What the watcher stores must not depend on where the pass ran: a pass sent as a delta (pickled, as
the pipe does) and merged back gives the same stored snapshot, byte for byte, as the same pass merged
directly; and a real sampling process against bench/simulate.py's model (in a process of its own)
brings the model's offsets and commits into the stored snapshot.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import pytest
from django.test import override_settings

from bench.simulate import Model, RemoteModelFactory, RemoteModelGateway, SimGateway, start_model_server
from console.snapshots import loader, store
from console.snapshots.parts import group_of_part, group_part
from console.watcher.deltas import DeltaMaker
from console.watcher.loop import ClusterWatcher
from tests.support import time_budget, wait_for

pytestmark = pytest.mark.django_db


def first_sample(cluster: str, partitions: int, groups: int, seed: int) -> Any:
    """A sampler's first pass over a model of `partitions` (topics of 10) on 5 brokers."""
    from console.watcher.sampler import Sampler

    gw = SimGateway(Model(partitions=partitions, groups=groups, brokers=5, per_topic=10, seed=seed), 0.0)
    layout = [(t.name, p.partition) for t in gw.metadata().topics for p in t.partitions]
    with override_settings(ANALYTICS_SAMPLES=False):
        return Sampler(cluster, gw, True, lambda rows: None).take(layout, [1, 2, 3, 4, 5])  # type: ignore[arg-type]


def groups_passed_to(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    """`module.name` (a function of one group state) made to note each group id it is called with: the ids, in order."""
    seen: list[str] = []
    real = getattr(module, name)

    def counted(g: Any) -> Any:
        seen.append(g.group_id)
        return real(g)

    monkeypatch.setattr(module, name, counted)
    return seen


def _stored(cluster: str, rename: str) -> bytes:
    loader._cache.pop(cluster, None)
    loader._raw_parts.pop(cluster, None)
    snap = loader.load(cluster)
    assert snap is not None
    return snap.content_bytes().replace(cluster.encode(), rename.encode())


def test_a_pass_sent_as_a_delta_stores_what_the_pass_merged_directly_stores(redis_server: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import time as time_module
    from multiprocessing import Pipe

    from console.watcher import deltas, sampling_process

    class Alive:
        pid = 0

        def is_alive(self) -> bool:
            return True

    clock = [1_800_000_000.0]
    monkeypatch.setattr(time_module, "time", lambda: clock[0])
    # The changed groups go in pieces of 7 ahead of their delta (2,000 in the product), over a real
    # pipe, and the watcher's side of the sampling process puts them together again.
    monkeypatch.setattr(deltas, "GROUP_PIECE", 7)
    # ... and the changed offsets and sizes in pieces of whole topics, about 25 partitions each
    # (20,000 in the product).
    monkeypatch.setattr(deltas, "OFFSETS_PIECE", 25)
    # Groups whose last part is in Redis are written there as their piece arrives (GroupParts.direct).
    ahead: list[int] = []
    put_parts = store.put_parts

    def counted(cluster: str, parts: Any) -> None:
        ahead.append(len(parts))
        put_parts(cluster, parts)

    monkeypatch.setattr(store, "put_parts", counted)
    pieces = 0
    offsets_pieces: dict[str, int] = {}
    # The cycles that knew their parts' changes from what they serialised and what arrived (not
    # by comparing every digest), and the parts those changed.
    incremental = changed_parts = failed = 0
    for seed in range(3):
        model = Model(partitions=300, groups=40, brokers=5, per_topic=10, seed=seed)
        rng = random.Random(seed)
        with override_settings(ANALYTICS_SAMPLES=False, WATCHER_SIZES_INTERVAL=2.0):
            direct = ClusterWatcher(f"sp-direct-{seed}", "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
            via = ClusterWatcher(f"sp-delta-{seed}", "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
            maker = DeltaMaker()
            remote = sampling_process.RemoteSampler(f"sp-delta-{seed}", True, None, on_events=lambda events: None)
            ours, theirs = Pipe()
            remote._process, remote._conn = Alive(), ours
            direct.cycle()
            via.cycle()
            with_groups = 0
            for i in range(30):
                clock[0] += 1.0
                if rng.random() < 0.6:
                    model.step(rng.choice([0.005, 0.05, 0.2]), 1.0)
                if rng.random() < 0.7:
                    snap = direct.previous
                    assert snap is not None
                    sample = direct.sampler.take(direct._partitions(snap), sorted(snap.live_broker_ids()))  # type: ignore[union-attr]
                    messages = list(maker.messages(sample, [], {}))
                    pieces += len(messages) - 1
                    for message in messages:
                        if isinstance(message, tuple) and message[0] == "offsets":
                            offsets_pieces[message[1]] = offsets_pieces.get(message[1], 0) + 1
                            assert sum(len(parts[0]) for parts in message[2].values()) < 25 + 10  # (whole topics of 10)
                        theirs.send(message)
                    direct.merge(sample)
                    [taken] = remote.receive(0.0)
                    via.merge(taken)
                direct.cycle()
                if i in (8, 9, 10):
                    # A cycle that fails while serialising, after it read the metadata and took the
                    # offsets and the groups named as changed: the next one stores all of it.
                    def broken(*args: Any, **kwargs: Any) -> Any:
                        raise RuntimeError("serialising failed (test)")

                    assert via._topic_bytes is not None
                    via._topic_bytes.each = broken  # type: ignore[method-assign]
                    try:
                        via.cycle()
                    except RuntimeError:
                        failed += 1  # (a cycle with nothing new to serialise does not get there)
                    del via._topic_bytes.each
                b, _ = via.cycle()
                assert not b.groups  # the watcher holds the groups only as their JSON
                # The digests the watcher holds are those of every part in Redis.
                assert via._content_key is not None
                held = store.client().hgetall(store.parts_key(f"sp-delta-{seed}"))
                assert via._content_key[1] == store.digests_of({k.decode(): v for k, v in held.items()}), (seed, i)
                if via._changes is not None:
                    incremental += 1
                    changed_parts += len(via._changes.changed) + len(via._changes.removed)
                # A reader holding the version before reads this one's changes only (the parts
                # written ahead among them): the same as reading it whole.
                read = loader.load(f"sp-delta-{seed}")
                assert read is not None
                changes_only = read.content_bytes().replace(f"sp-delta-{seed}".encode(), b"x")
                assert _stored(f"sp-direct-{seed}", "x") == _stored(f"sp-delta-{seed}", "x") == changes_only, (seed, i)
                loaded = loader.load(f"sp-delta-{seed}")
                assert loaded is not None
                with_groups += bool(loaded.groups)
            assert with_groups > 10
            remote._process = None
    assert pieces > 20 and len(ahead) > 10 and sum(ahead) > 50
    assert incremental > 60 and changed_parts > 1000 and failed >= 3, (incremental, changed_parts, failed)
    assert offsets_pieces.keys() == {"ends", "starts", "sizes"} and min(offsets_pieces.values()) >= 3, offsets_pieces


def test_a_snapshot_made_while_a_passs_pieces_arrive_stores_every_group_each_as_one_pass_or_the_next_saw_it(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pieces of a pass renew the groups' JSON in the watcher as they arrive (DeltaMerger.apply_piece):
    a cycle made before the pass's delta (a leader moved meanwhile) stores every group, those of the
    pieces as the new pass saw them and the rest as the last one did; the delta then brings the rest."""
    from multiprocessing import Pipe

    from console.watcher import deltas, sampling_process

    class Alive:
        pid = 0

        def is_alive(self) -> bool:
            return True

    monkeypatch.setattr(deltas, "GROUP_PIECE", 7)
    model = Model(partitions=300, groups=40, brokers=5, per_topic=10, seed=4)
    cluster = "sp-pieces"
    with override_settings(ANALYTICS_SAMPLES=False):
        direct = ClusterWatcher("sp-pieces-direct", "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
        via = ClusterWatcher(cluster, "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
        maker = DeltaMaker()
        remote = sampling_process.RemoteSampler(cluster, True, None, on_events=lambda events: None)
        ours, theirs = Pipe()
        remote._process, remote._conn = Alive(), ours
        direct.cycle()
        via.cycle()

        def groups_stored() -> dict[str, Any]:
            loader._cache.pop(cluster, None)
            loader._raw_parts.pop(cluster, None)
            snap = loader.load(cluster)
            assert snap is not None
            return {gid: group_of_part(group_part(g)) for gid, g in snap.groups.items()}

        def take() -> list[Any]:
            snap = direct.previous
            assert snap is not None
            return list(maker.messages(direct.sampler.take(direct._partitions(snap), sorted(snap.live_broker_ids())), [], {}))  # type: ignore[union-attr]

        for message in take():
            theirs.send(message)
        [first] = remote.receive(0.0)
        via.merge(first)
        via.cycle()
        before = groups_stored()
        assert len(before) == 40
        model.step(0.2, 5.0)  # the groups commit anew: the next pass changes most of them
        messages = take()
        assert len(messages) >= 3  # at least two pieces of 7, then the delta with the rest
        new_json = {gid: raw for piece in messages[:-1] for gid, (raw, _topics) in piece[1].items()}
        assert messages[-1].groups is not None
        new_json.update({gid: raw for gid, (raw, _topics) in messages[-1].groups.items()})
        for piece in messages[:2]:
            remote._merger.apply_piece(piece[1])  # (as receive() does with each piece)
        model.step(0.05, 0.0)  # a leader moves: the next cycle makes a snapshot before the delta came
        via.cycle()
        between = groups_stored()
        renewed = {gid for piece in messages[:2] for gid in piece[1]}
        assert between.keys() == before.keys() and len(renewed) == 14
        for gid, g in between.items():
            expected = new_json[gid] if gid in renewed else group_part(before[gid])
            assert group_part(g) == expected or group_of_part(expected) == g, gid
        assert any(between[gid] != before[gid] for gid in renewed)
        assert all(between[gid] == before[gid] for gid in between.keys() - renewed)
        for message in messages[2:]:
            theirs.send(message)
        [second] = remote.receive(0.0)
        via.merge(second)
        via.cycle()
        after = groups_stored()
        assert after.keys() == before.keys()
        for gid, g in after.items():  # the whole pass now: its changed groups as it saw them, the others as before
            expected = new_json[gid] if gid in new_json else group_part(before[gid])
            assert group_part(g) == expected or group_of_part(expected) == g, gid
        assert any(after[gid] != between[gid] for gid in new_json.keys() - renewed)
        remote._process = None


@contextmanager
def remote_watcher(cluster: str, model: dict[str, int], factory: type[RemoteModelFactory] = RemoteModelFactory,
                   **overrides: Any) -> Iterator[tuple[ClusterWatcher, RemoteModelGateway]]:
    """A watcher whose passes run in a real sampling process, against a model served from a process of
    its own (changing only when the test steps it), its first cycle done; both stopped afterwards."""
    server, address = start_model_server({**model, "change_rate": 0.0})
    try:
        gw = RemoteModelGateway(address, 0.0)
        with override_settings(ANALYTICS_SAMPLES=False, WATCHER_OFFSETS_INTERVAL=0.5, **overrides):
            w = ClusterWatcher(cluster, "test", gw=gw, remote=True,  # type: ignore[arg-type]
                               remote_gateway=factory(address, 0.0, 3))
            try:
                w.cycle()
                yield w, gw
            finally:
                w.close()
    finally:
        server.kill()


@pytest.mark.parametrize("niceness", [0, 7])
def test_the_sampling_process_runs_below_the_watchers_priority_by_its_setting(redis_server: str, niceness: int) -> None:
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    with remote_watcher(f"sp-nice-{niceness}", {"partitions": 20, "groups": 2, "brokers": 3, "per_topic": 10},
                        WATCHER_SAMPLER_NICENESS=niceness) as (w, _gw):
        assert w.remote is not None
        deadline = time.monotonic() + time_budget(60)
        while not w.remote.times:  # (a pass in: the process is past its start, niced before Django)
            w.sample_offsets(wait=0.5)
            assert time.monotonic() < deadline, "no pass came in"
        assert w.remote.pid is not None
        assert os.getpriority(os.PRIO_PROCESS, w.remote.pid) == min(19, mine + niceness)


def test_a_real_sampling_process_brings_the_models_offsets_and_commits(redis_server: str) -> None:
    cluster = "sp-remote"
    with remote_watcher(cluster, {"partitions": 200, "groups": 20, "brokers": 4, "per_topic": 10}) as (w, gw):
        gw.ask("step", 0.05, 1.0)
        wanted_ends = gw.ask("offsets", "latest")
        wanted_commits = gw.ask("group_commits", [g[0] for g in gw.ask("group_list")])

        def matches() -> bool:
            w.sample_offsets(wait=1.0)
            w.cycle()
            snap = loader.load(cluster)
            if snap is None or len(snap.groups) != len(wanted_commits):
                return False
            ends = {t: [p.end_offset for p in s.partitions] for t, s in snap.topics.items()}
            commits = {gid: (topic, {int(k.rpartition(":")[2]): v for k, v in snap.groups[gid].offsets.items()})
                       for gid, (topic, _c) in wanted_commits.items()}
            return ends == wanted_ends and commits == wanted_commits

        deadline = time.monotonic() + time_budget(60)
        while not matches():
            assert time.monotonic() < deadline, "the sampling process's passes never reached the stored snapshot"
        snap = loader.load(cluster)
        assert snap is not None
        topics_of: dict[str, Any] = {}
        for gid, (topic, _c) in wanted_commits.items():
            topics_of.setdefault(topic, []).append(gid)
        assert snap.topic_groups == {t: sorted(g) for t, g in topics_of.items()}
        assert all(g.status is not None for g in snap.groups.values())  # evaluated in the child
        assert w.remote is not None and w.remote.pid is not None
        pid = w.remote.pid
    # Closed: the child is gone.
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)


def test_the_watcher_holds_only_unwritten_group_parts_and_after_redis_lost_them_writes_every_group_again(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a save wrote the groups' parts the watcher keeps only their digests; when Redis loses
    everything (a save refused, then an empty Redis) it stores nothing until the sampling process
    has sent every group again, then the whole snapshot, every group as before: never a snapshot
    without its groups."""
    cluster = "sp-redis-lost"
    with remote_watcher(cluster, {"partitions": 200, "groups": 20, "brokers": 4, "per_topic": 10}) as (w, gw):
        gw.ask("step", 0.05, 1.0)
        deadline = time.monotonic() + time_budget(60)
        while True:
            w.sample_offsets(wait=1.0)
            w.cycle()
            snap = loader.load(cluster)
            if snap is not None and len(snap.groups) == 20 and all(g.status is not None for g in snap.groups.values()):
                break
            assert time.monotonic() < deadline, "the groups never reached the stored snapshot"
        before = _stored(cluster, "x")
        parts = w._snapshot_group_parts
        assert parts is not None and len(parts) == 20
        assert len(parts.held()) < 20  # written: only their digests stay (the idle model's passes change none)
        assert len(parts.held()) == 0
        # Redis goes away and comes back empty: the save in between is refused.
        real_save = store.save

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise store.StoreUnavailable("Redis is unreachable (test)")

        monkeypatch.setattr(store, "save", refused)
        gw.ask("step", 0.05, 1.0)  # (something to store)
        w.sample_offsets(wait=5.0)
        w.cycle()
        assert not w.publisher.saved_once and w.publisher.writes_all
        monkeypatch.setattr(store, "save", real_save)
        redis_client = store.client()
        for key in list(redis_client.scan_iter(f"*{cluster}*")):
            redis_client.delete(key)
        loader._cache.pop(cluster, None)
        loader._raw_parts.pop(cluster, None)
        # The next cycle must write everything and holds only the digests of most groups: it writes nothing yet.
        w.cycle()
        assert loader.load(cluster) is None and w._groups_asked_at is not None
        assert w.remote is not None and w.remote._groups_wanted
        while not w.publisher.saved_once:
            w.sample_offsets(wait=1.0)  # (sends the request; the sampling process answers with every group)
            w.cycle()
            assert time.monotonic() < deadline, "every group's part never came again"
        snap = loader.load(cluster)
        assert snap is not None and len(snap.groups) == 20
        assert _stored(cluster, "x") != before  # (the model moved on meanwhile)
        wanted = gw.ask("group_commits", [g[0] for g in gw.ask("group_list")])
        assert {gid: {int(k.rpartition(":")[2]): v for k, v in g.offsets.items()} for gid, g in snap.groups.items()} == \
            {gid: commits for gid, (_topic, commits) in wanted.items()}
        assert len(parts.held()) == 0 or w._snapshot_group_parts is not parts  # written again: let go of


def test_a_pass_over_an_idle_cluster_sends_nothing_but_its_stamp(redis_server: str) -> None:
    model = Model(partitions=100, groups=10, brokers=3, per_topic=10, seed=9)
    with override_settings(ANALYTICS_SAMPLES=False):
        w = ClusterWatcher("sp-idle", "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
        snap = w.cycle()[0]
        maker = DeltaMaker()
        partitions, brokers = w._partitions(snap), sorted(snap.live_broker_ids())
        first = maker.make(w.sampler.take(partitions, brokers), [], {})  # type: ignore[union-attr]
        assert first.full and sum(len(n) for n, _v in first.ends.values()) == 100 and first.groups is not None and len(first.groups) == 10
        second = maker.make(w.sampler.take(partitions, brokers), [], {})  # type: ignore[union-attr]
        assert not second.full and second.ends == {} and second.starts == {} and second.groups == {}
        assert second.group_ids is None and not second.sizes
        model.step(0.1, 1.0)
        third = maker.make(w.sampler.take(partitions, brokers), [], {})  # type: ignore[union-attr]
        assert 0 < sum(len(n) for n, _v in third.ends.values()) <= 10 and third.groups  # the partitions that moved, the groups behind them


def test_a_sampling_process_that_dies_is_started_again_and_says_so(redis_server: str) -> None:
    from brokers_app.models import Event  # (here: the sampling process imports this module before Django is set up)

    cluster = "sp-restart"
    with remote_watcher(cluster, {"partitions": 100, "groups": 10, "brokers": 3, "per_topic": 10}) as (w, _gw):
        deadline = time.monotonic() + time_budget(60)
        while w.remote is not None and not w.remote.times:
            w.sample_offsets(wait=1.0)
            assert time.monotonic() < deadline
        assert w.remote is not None and w.remote.pid is not None
        first = w.remote.pid
        os.kill(first, signal.SIGKILL)
        while w.remote.pid in (first, None) or w.remote._process.is_alive() is False:
            w.sample_offsets(wait=0.5)
            assert time.monotonic() < deadline, "no new sampling process"
        assert w.remote.restarts == 1
        # The dead process's outbox (what the watcher tells it) has ended with it; the new one has its own.
        import threading

        deadline_outbox = time.monotonic() + time_budget(10)
        while sum(t.name == f"sampler-outbox-{cluster}" for t in threading.enumerate()) != 1:
            assert time.monotonic() < deadline_outbox, [t.name for t in threading.enumerate()]
            time.sleep(0.1)
        # The new process's passes come in (its first one whole), and the cycle still builds on them.
        passes = len(w.remote.times)
        deadline = time.monotonic() + time_budget(60)  # (a new process imports Django and connects afresh)
        while len(w.remote.times) == passes:
            w.sample_offsets(wait=1.0)
            assert time.monotonic() < deadline, "the new sampling process sends nothing"
        snap, _ = w.cycle()
        assert snap.reachable and all(p.end_offset is not None for t in snap.topics.values() for p in t.partitions)
        event = Event.objects.filter(cluster=cluster, kind="watcher").get()
        assert "sampling process ended (signal SIGKILL) and was started again" in event.message


class SlowOffsetsFactory(RemoteModelFactory):
    """A gateway whose offsets reads take FIRST seconds the first time in each process and LATER
    seconds after it, then answer as the model does."""

    FIRST = 0.0
    LATER = 0.0

    def __call__(self) -> RemoteModelGateway:
        gw = super().__call__()
        read = gw.list_offsets
        calls = [0]

        def slow(*args: Any) -> Any:
            time.sleep(self.FIRST if not calls[0] else self.LATER)
            calls[0] += 1
            return read(*args)

        gw.list_offsets = slow  # type: ignore[method-assign,assignment]
        return gw


class HangingFactory(SlowOffsetsFactory):
    """Offsets reads that never return (as a deadlocked client library's would)."""

    FIRST = LATER = 3600.0


def test_a_sampling_process_that_stops_answering_is_replaced(redis_server: str) -> None:
    from brokers_app.models import Event

    cluster = "sp-stall"
    with remote_watcher(cluster, {"partitions": 50, "groups": 5, "brokers": 3, "per_topic": 10}, HangingFactory,
                        WATCHER_SAMPLER_STALL_SECONDS=5.0) as (w, _gw):
        deadline = time.monotonic() + time_budget(60)
        while w.remote is not None and w.remote.restarts == 0:
            w.sample_offsets(wait=0.5)
            assert time.monotonic() < deadline, "a silent sampling process was never replaced"
        event = Event.objects.filter(cluster=cluster, kind="watcher").first()
        assert event is not None and "sent nothing for 5 s and was stopped" in event.message


class SlowFirstPassFactory(SlowOffsetsFactory):
    """A first offsets read of 6 s in each process (as a first pass over a very large cluster on a
    loaded machine takes minutes), the rest at once: over the 5 s limit, under the next process's
    10 s with 4 s left for that process to start (8 s left 2, too few under the full suite's load)."""

    FIRST = 6.0


def test_a_first_pass_longer_than_the_stall_limit_gets_twice_as_long_in_the_next_process(redis_server: str) -> None:
    from brokers_app.models import Event

    cluster = "sp-slow-first"
    with remote_watcher(cluster, {"partitions": 50, "groups": 5, "brokers": 3, "per_topic": 10}, SlowFirstPassFactory,
                        WATCHER_SAMPLER_STALL_SECONDS=5.0) as (w, _gw):
        deadline = time.monotonic() + time_budget(90)
        assert w.remote is not None
        while not w.remote.times:  # (a process stopped after 5 s; its successor's first pass in within 10)
            w.sample_offsets(wait=0.5)
            assert time.monotonic() < deadline, "every first pass was cut short"
        # One restart on a quiet machine; on one loaded past its cores a successor's start may eat into
        # its time too, so the count is open, but each successor is given twice its predecessor's limit.
        assert w.remote.restarts >= 1
        messages = [e.message for e in Event.objects.filter(cluster=cluster, kind="watcher").order_by("id")]
        stops = [m for m in messages if "was stopped; the next one's first pass may take" in m]
        assert len(stops) == w.remote.restarts
        for n, message in enumerate(stops):
            limit = 5 * 2 ** n
            assert f"sent nothing for {limit} s and was stopped; the next one's first pass may take {2 * limit} s" in message
        # After its first pass, the process is held to the setting again.
        assert w.remote.stall_limit() == 5.0


def restarts_over_two_passes(w: ClusterWatcher, within: float = 60) -> int:
    """How many times the watcher's sampling process was started again before two passes came in."""
    deadline = time.monotonic() + within
    assert w.remote is not None
    while len(w.remote.times) < 2:
        w.sample_offsets(wait=0.5)
        assert time.monotonic() < deadline, "no two passes came in"
    return w.remote.restarts


class SlowStepsFactory(SlowOffsetsFactory):
    """Every offsets read takes 11 s: a pass (two reads) takes 22 s, over a 20 s limit, each step 9 s under
    it. The tests using it run the process at the watcher's priority: niced under the full suite's load
    it was starved past even 9 s, which tests the machine, not the rule."""

    FIRST = LATER = 11.0


def test_a_pass_longer_than_the_stall_limit_made_of_shorter_steps_is_not_taken_for_hung(redis_server: str) -> None:
    """A pass says it goes on as each answer comes (at most every quarter of the stall limit): only a
    process stuck in one call is stopped, not one whose pass is long (the first over 300,000
    partitions and 50,000 groups took two minutes, the default limit)."""
    cluster = "sp-slow-steps"
    with remote_watcher(cluster, {"partitions": 50, "groups": 5, "brokers": 3, "per_topic": 10}, SlowStepsFactory,
                        WATCHER_SAMPLER_STALL_SECONDS=20.0, WATCHER_STARTS_INTERVAL=1.0,  # (both reads each pass)
                        WATCHER_SAMPLER_NICENESS=0) as (w, _gw):
        assert restarts_over_two_passes(w, within=180) == 0
        assert w.remote is not None and min(w.remote.times) >= 20.0  # (each longer than the limit)


def test_a_sign_of_work_waiting_unread_is_not_taken_for_a_stall(redis_server: str) -> None:
    """The child is judged by its own silence: a watcher slow to read its pipe (a loaded machine) finds
    the child's message waiting there, and does not stop the child for the time it was not reading."""
    with remote_watcher("sp-unread", {"partitions": 50, "groups": 5, "brokers": 3, "per_topic": 10},
                        WATCHER_SAMPLER_STALL_SECONDS=5.0) as (w, _gw):
        remote = w.remote
        assert remote is not None
        w.sample_offsets(wait=0.5)  # (the process starts with the first call)
        wait_for(lambda: remote._conn is not None and remote._conn.poll(0), 60, what="a message from the sampling process")
        remote._heard_at -= 3600  # (as if the watcher had not read for an hour)
        w.sample_offsets(wait=0.5)
        assert remote.restarts == 0


class SlowStartFactory(SlowOffsetsFactory):
    """A gateway that takes 13 s to make (a process starting on a loaded machine), then offsets reads
    of 11 s: starting and the first read together outlast the 20 s limit, each alone is well under it
    (3.5 s and 3 s under a 5 s limit were overrun by a loaded machine's delays to the niced process)."""

    FIRST = LATER = 11.0

    def __call__(self) -> RemoteModelGateway:
        time.sleep(13.0)
        return super().__call__()


def test_a_process_slow_to_start_is_held_to_the_limit_from_when_it_started(redis_server: str) -> None:
    """The stall limit is for one step: a process says so as each step of starting ends (Django, then
    the gateway), so the seconds it took to start do not count against its first read."""
    cluster = "sp-slow-start"
    with remote_watcher(cluster, {"partitions": 50, "groups": 5, "brokers": 3, "per_topic": 10}, SlowStartFactory,
                        WATCHER_SAMPLER_STALL_SECONDS=20.0, WATCHER_SAMPLER_NICENESS=0) as (w, _gw):
        assert restarts_over_two_passes(w, within=180) == 0


class BrokenFactory(RemoteModelFactory):
    """A gateway that cannot be made: the sampling process ends as soon as it starts."""

    def __call__(self) -> RemoteModelGateway:
        raise RuntimeError("no gateway here")


def test_a_sampling_process_that_cannot_start_is_retried_with_growing_pauses(redis_server: str) -> None:
    from brokers_app.models import Event

    cluster = "sp-broken"
    with remote_watcher(cluster, {"partitions": 20, "groups": 2, "brokers": 3, "per_topic": 10}, BrokenFactory) as (w, _gw):
        remote = w.remote
        assert remote is not None
        # The pause announced at each end, the time before which no process may start, and when each
        # start came: what the rule says, measured so that a loaded machine's delays cannot break it.
        seen: list[tuple[str, float, float]] = []  # ("end", pause, not before) or ("start", time, 0)
        notice, start = remote.on_restart, remote._start

        def noticed(reason: str) -> None:
            seen.append(("end", remote._pause, remote._not_before))
            if notice is not None:
                notice(reason)

        def started() -> None:
            seen.append(("start", time.monotonic(), 0.0))
            start()

        remote.on_restart, remote._start = noticed, started  # type: ignore[method-assign]
        deadline = time.monotonic() + time_budget(120)
        while [kind for kind, _a, _b in seen].count("end") < 3 or seen[-1][0] != "start":
            w.sample_offsets(wait=0.2)
            assert time.monotonic() < deadline, seen
        ends = [(i, pause, earliest) for i, (kind, pause, earliest) in enumerate(seen) if kind == "end"]
        # Pauses that double from 1 s, each kept before the next start: not one start per call.
        assert [pause for _i, pause, _e in ends[:3]] == [1.0, 2.0, 4.0], seen
        assert all(seen[i + 1][0] == "start" and seen[i + 1][1] >= earliest for i, _p, earliest in ends[:3]), seen
        assert Event.objects.filter(cluster=cluster, kind="watcher").count() == remote.restarts


def test_a_passs_groups_are_serialised_piece_by_piece_as_they_are_sent(redis_server: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON of a pass's changed groups is made one piece at a time, as each is taken to be sent:
    a pass that changed 50,000 groups held 150 MB of it at once."""
    from console.watcher import deltas

    monkeypatch.setattr(deltas, "GROUP_PIECE", 7)
    made = groups_passed_to(monkeypatch, deltas, "group_part")
    sample = first_sample("pieces-test", partitions=300, groups=40, seed=1)
    messages = DeltaMaker().messages(sample, [], {})
    assert made == []
    first = next(messages)
    assert first[0] == "groups" and len(first[1]) == 7 and made == list(first[1])
    rest = list(messages)
    assert len(made) == 40 and len(rest) == 5 and len(rest[-1].groups) == 5  # 5 pieces of 7, then the delta with 5


def test_the_delta_maker_keeps_no_groups_time_lags_or_statuses_from_the_pass_before_yet_sends_each_change() -> None:
    """What a pass's delta compares each group with: its packed figures by value, not the objects
    (they kept the whole previous pass's time lags alive through the next pass, to its peak)."""
    from console.snapshots.model import GroupState
    from console.watcher.sample import Sample
    from consumers_app.lag_values import LagSeconds, LagStatuses

    def statuses(codes: list[int]) -> Sequence[str]:
        return cast(Sequence[str], LagStatuses(codes))  # (as the evaluation hands them out)

    def state(gid: str) -> GroupState:
        return GroupState(group_id=gid, state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                          members=[], offsets={"t:0": 5, "t:1": 7}, status="WARN", time_lag=4.5,
                          lag_keys=("t:0", "t:1"), lag_status=statuses([1, 0]), lag_seconds=LagSeconds([4.5, None]))

    def sample(groups: dict[str, GroupState], at: float) -> Sample:
        return Sample(started=at, ends={("t", 0): 9, ("t", 1): 7}, starts={("t", 0): 0, ("t", 1): 0}, sizes=None, rates={},
                      groups=groups, groups_changed=True, changed=())

    groups = {gid: state(gid) for gid in ("same", "seconds", "status", "pay<ments>/é")}
    maker = DeltaMaker()
    first = maker.make(sample(groups, 1.0), [], {})
    assert first.groups is not None and set(first.groups) == set(groups)
    # The next pass judges every group again (new objects, as the evaluation makes them): equal
    # figures for two, a time lag and a status changed for the others.
    groups["same"].lag_seconds, groups["same"].lag_status = LagSeconds([4.5, None]), statuses([1, 0])
    groups["pay<ments>/é"].lag_seconds = LagSeconds([4.5, None])
    groups["seconds"].lag_seconds = LagSeconds([7.25, None])
    groups["status"].lag_status = statuses([2, 0])
    second = maker.make(sample(groups, 2.0), [], {})
    assert second.groups is not None and set(second.groups) == {"seconds", "status"}
    held = [x for marks in maker._sent.values() for x in marks]
    assert not any(isinstance(x, (LagSeconds, LagStatuses)) for x in held)
    # (each group's mark is its state and one digest of its figures: 32 bytes, not a tuple of them)
    assert all(len(marks) == 2 and marks[0] is groups[gid] and type(marks[1]) is int for gid, marks in maker._sent.items())
    # (a time lag turning unknown is a change too)
    groups["same"].lag_seconds = LagSeconds([None, None])
    third = maker.make(sample(groups, 3.0), [], {})
    assert third.groups is not None and set(third.groups) == {"same"}


def test_the_delta_maker_digests_no_group_when_the_pass_says_none_changed_since_the_pass_it_sent_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass whose groups are the last pass's states with their evaluations as they were
    (`groups_changed` False, against the groups it was compared with) sends no group, without
    digesting any (an idle cluster's every pass); a pass compared with groups other than the ones
    sent last (a pass not sent in between) is digested, and what changed is sent."""
    from console.snapshots.model import GroupState
    from console.watcher import deltas
    from console.watcher.sample import Sample

    digested = groups_passed_to(monkeypatch, deltas, "_marks")

    def state(gid: str, status: str = "OK") -> GroupState:
        return GroupState(group_id=gid, state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                          members=[], offsets={"t:0": 5}, status=status, time_lag=0.0, lag_keys=("t:0",),
                          lag_status=["OK"], lag_seconds=[0.0])

    def sample(groups: dict[str, GroupState], number: int, since: int, changed: bool) -> Sample:
        return Sample(started=float(number), ends={("t", 0): 5}, starts={("t", 0): 0}, sizes=None, rates={}, groups=groups,
                      groups_changed=changed, changed=(), number=number, groups_since=since)

    first = {gid: state(gid) for gid in ("a", "b<c>/é")}
    maker = DeltaMaker()
    assert set(maker.make(sample(first, 1, 0, True), [], {}).groups or {}) == set(first) and len(digested) == 2
    second = dict(first)  # (the same states, carried over: nothing changed)
    digested.clear()
    delta = maker.make(sample(second, 2, 1, False), [], {})
    assert not delta.groups and digested == []
    # A pass the maker was not given (3): its changed state is in the next, which says nothing
    # changed since that pass; compared with another pass than the one sent, it is digested and sent.
    third = {**second, "a": state("a", "WARN")}
    delta = maker.make(sample(dict(third), 4, 3, False), [], {})
    assert set(delta.groups or {}) == {"a"} and sorted(digested) == ["a", "b<c>/é"]


def test_a_samplers_idle_pass_is_sent_without_digesting_a_group_and_a_commit_is_sent(redis_server: str,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampler numbers its passes and says which pass its groups were compared with: over an
    idle model the second pass sends no group and digests none; a group's new commit is sent."""
    from console.watcher import deltas
    from console.watcher.sampler import Sampler

    digested = groups_passed_to(monkeypatch, deltas, "_marks")
    model = Model(partitions=200, groups=12, brokers=5, per_topic=10, seed=4)
    gw = SimGateway(model, 0.0)
    layout = [(t.name, p.partition) for t in gw.metadata().topics for p in t.partitions]
    maker = DeltaMaker()
    with override_settings(ANALYTICS_SAMPLES=False):
        sampler = Sampler("idle-digests", gw, True, lambda rows: None)  # type: ignore[arg-type]
        first = sampler.take(layout, [1, 2, 3, 4, 5])  # type: ignore[arg-type]
        assert set(maker.make(first, [], {}).groups or {}) == set(model.groups) and len(digested) == 12
        digested.clear()
        second = sampler.take(layout, [1, 2, 3, 4, 5])  # type: ignore[arg-type]
        assert second.groups_since == first.number != second.number
        assert not maker.make(second, [], {}).groups and digested == []
        gid = sorted(model.groups)[0]
        topic, committed, members = model.groups[gid]
        model.groups[gid] = (topic, {p: max(0, c - 1) for p, c in committed.items()}, members)  # (a reset back)
        third = sampler.take(layout, [1, 2, 3, 4, 5])  # type: ignore[arg-type]
        assert third.groups_changed and set(maker.make(third, [], {}).groups or {}) == {gid}


def test_a_first_passs_offsets_and_sizes_go_in_pieces_each_a_small_pickle(redis_server: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A first pass sends every partition's offsets and sizes: as one delta (24 MB pickled at 300,000
    partitions) its pickling held three times that at once. In pieces of OFFSETS_PIECE partitions
    (whole topics), each message is a small pickle, and the watcher puts them together as the
    one delta they replace."""
    import pickle

    from console.watcher import delta_merge, deltas

    sample = first_sample("offsets-pieces", partitions=3000, groups=20, seed=2)
    whole = DeltaMaker().make(sample, [], {})
    monkeypatch.setattr(deltas, "OFFSETS_PIECE", 200)
    messages = list(DeltaMaker().messages(sample, [], {}))
    sizes = [len(pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL)) for m in messages]
    assert len(pickle.dumps(whole, protocol=pickle.HIGHEST_PROTOCOL)) > 8 * max(sizes), sizes
    offsets = [m for m in messages if isinstance(m, tuple) and m[0] == "offsets"]
    assert len(offsets) >= 3 * (3000 // 200 - 1)  # ends, starts and sizes, each in pieces
    merger = delta_merge.DeltaMerger()
    for m in messages[:-1]:
        if m[0] == "offsets":
            merger.apply_offsets(m[1], m[2])
        else:
            merger.apply_piece(m[1])
    pieced = merger.apply(messages[-1])
    at_once = delta_merge.DeltaMerger().apply(whole)
    assert dict(pieced.ends) == dict(at_once.ends) == dict(sample.ends) and len(pieced.ends) == 3000
    assert dict(pieced.starts) == dict(at_once.starts) == dict(sample.starts)
    assert pieced.sizes is not None and at_once.sizes is not None
    assert {tp: dict(v) for tp, v in pieced.sizes.items()} == {tp: dict(v) for tp, v in at_once.sizes.items()}
    assert sorted(pieced.changed) == sorted(at_once.changed) and len(pieced.changed) == 3000


def test_the_watcher_takes_a_pass_in_by_steps_giving_way_between_them_and_gets_what_one_step_gets(
        redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DeltaMerger.apply takes a pass's offsets and sizes in MERGE_STEP_TOPICS topics at a time and
    calls give_way (turns.CycleFirst: a metadata cycle waiting runs) after each step; the sample is
    the same as taken in one step."""
    from console.watcher import delta_merge

    sample = first_sample("merge-steps", partitions=600, groups=5, seed=3)  # (60 topics)
    delta = DeltaMaker().make(sample, [], {})
    whole = delta_merge.DeltaMerger().apply(delta)
    monkeypatch.setattr(delta_merge, "MERGE_STEP_TOPICS", 7)
    calls: list[int] = []
    merger = delta_merge.DeltaMerger(lambda: calls.append(len(calls)))
    stepped = merger.apply(delta)
    assert len(calls) >= 3 * (60 // 7)  # ends, starts and sizes: each after every 7 topics
    assert dict(stepped.ends) == dict(whole.ends) == dict(sample.ends) and len(stepped.ends) == 600
    assert dict(stepped.starts) == dict(whole.starts)
    assert stepped.sizes is not None and whole.sizes is not None
    assert {tp: dict(v) for tp, v in stepped.sizes.items()} == {tp: dict(v) for tp, v in whole.sizes.items()}
    assert sorted(stepped.changed) == sorted(whole.changed) and len(stepped.changed) == 600


def test_a_new_target_told_while_the_process_sends_a_pass_does_not_wait_for_it(redis_server: str) -> None:
    """The pipe holds a few hundred KB each way. A first pass over 100,000 partitions fills it while
    the child waits for its pieces to be read; a new target as large (a broker gone or back changes
    it), told from the thread that takes the passes in, must not wait for the child to read it: the
    child waits for that thread. It did, both for ever (seen at 300,000 partitions: offsets and lag
    frozen, the watcher unable to close)."""
    import threading

    with remote_watcher("sp-duplex", {"partitions": 100_000, "groups": 0, "brokers": 3, "per_topic": 10}) as (w, _gw):
        remote, snap = w.remote, w.previous
        assert remote is not None and snap is not None
        layout, brokers = w._partitions(snap), sorted(snap.live_broker_ids())
        remote.target(layout, brokers)
        pid = remote.pid
        assert remote._conn.poll(90), "the first pass never came"
        time.sleep(3.0)  # (its pieces fill the pipe: nothing is taken in meanwhile)
        other = [(name, number) for name, numbers in layout.topics[1:] for number in numbers]  # (all but one topic)
        told = threading.Thread(target=remote.target, args=(other, brokers), daemon=True)
        told.start()
        told.join(15)
        assert not told.is_alive(), "telling the sampling process its new target waited for the process"
        # The passes come in, the first and then one over the new target, from the same process.
        deadline = time.monotonic() + time_budget(120)
        while len(remote.times) < 2:
            remote.receive(1.0)
            assert time.monotonic() < deadline, "no pass after the new target"
        assert remote.pid == pid and remote.restarts == 0
