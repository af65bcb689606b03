"""The snapshot in Redis, stored in parts: a change writes only the topics it touched, and a process
holding the version before fetches and parses only those."""

from __future__ import annotations

import socket
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import pytest

from console.snapshots import loader, store
from console.snapshots.model import Snapshot
from console.snapshots.part_cache import TopicBytes, content_parts
from tests.unit._build import part, snapshot, topic

if TYPE_CHECKING:
    from console.watcher.loop import ClusterWatcher


def fresh_load(cluster: str) -> Snapshot | None:
    """What another process (nothing cached) reads."""
    loader._cache.pop(cluster, None)
    loader._raw_parts.pop(cluster, None)
    return loader.load(cluster)


def started_watcher(cluster: str, watcher: ClusterWatcher | None = None) -> ClusterWatcher:
    """A watcher (a new one, or `watcher` again) after loading the store as a process that holds
    nothing of it finds it."""
    from bench.simulate import Model, SimGateway
    from console.watcher.loop import ClusterWatcher

    if watcher is None:
        watcher = ClusterWatcher(cluster, "test", gw=SimGateway(Model(partitions=20, groups=2, brokers=3, per_topic=10, seed=1), 0.0))  # type: ignore[arg-type]
    loader._cache.pop(cluster, None)
    loader._raw_parts.pop(cluster, None)
    watcher.load_previous()
    return watcher


@pytest.fixture
def cluster(redis_server: str) -> str:
    name = "parts"
    store.client().delete(*[f"console:snapshot:{name}{suffix}" for suffix in ("", ":stamp", ":parts", ":changed", ":changes")])
    loader._cache.pop(name, None)
    loader._raw_parts.pop(name, None)
    return name


def test_a_change_rewrites_only_its_topics_and_readers_reparse_only_those(cluster: str) -> None:
    cache = TopicBytes()
    v1 = replace(snapshot(*(topic(f"t{i}", part(0, end_offset=i)) for i in range(50)), topic("odd/\"<é>"), topic("gone")),
                 cluster=cluster, version=1)
    stored = store.save(v1, content_parts(v1, cache), None)
    first = loader.load(cluster)
    assert first is not None and first.content_bytes() == v1.content_bytes()

    # Version 2: one topic's offsets moved, one topic deleted, one created.
    topics = {n: t for n, t in v1.topics.items() if n != "gone"}
    topics["t7"] = replace(topics["t7"], partitions=[part(0, end_offset=700)])
    topics["new"] = topic("new")
    v2 = replace(v1, version=2, topics=topics)
    parts = content_parts(v2, cache)
    assert cache.serialised == 2  # only t7 and new
    stored = store.save(v2, parts, stored)
    record = store.client().get(f"console:snapshot:{cluster}:changed")
    assert record is not None and b'"changed":["t:t7","t:new"]' in record and b'"removed":["t:gone"]' in record

    # (Behind the store's back, an unchanged topic's field is dropped: a reader that fetches only the
    # changed topics, as it should, never notices; one that read everything would lose t3.)
    store.client().hdel(f"console:snapshot:{cluster}:parts", "t:t3")
    second = loader.load(cluster)
    assert second is not None and second.version == 2
    assert second.content_bytes() == v2.content_bytes()
    assert second.topics["t3"] is first.topics["t3"]  # not fetched, not parsed again
    assert second.topics["t7"] is not first.topics["t7"] and second.topics["t7"].partitions[0].end_offset == 700
    assert "gone" not in second.topics
    # (only the changed topics are looked at; the order stays the names', "new" put in its place)
    assert list(second.topics) == sorted(second.topics) and list(second.topics)[:3] == ["new", "odd/\"<é>", "t0"]
    assert stored is not None and stored.digests["t:t3"] == store.digest(parts[1]["t:t3"])
    store.client().hset(f"console:snapshot:{cluster}:parts", "t:t3", parts[1]["t:t3"])
    # A process that never saw version 1 reads it all, and gets the same.
    other = fresh_load(cluster)
    assert other is not None and other.content_bytes() == v2.content_bytes()
    assert list(other.topics) == sorted(other.topics)

    # A reader that missed versions fetches what they changed, from the log of the last versions'
    # records (at 300,000 partitions a web process missed one in two, and read all 60,000 parts of
    # each then: 2 to 8 s a version).
    v3 = replace(v2, version=3, topics={**v2.topics, "t9": replace(v2.topics["t9"], min_isr=2)})
    stored = store.save(v3, content_parts(v3, cache), stored)
    v4 = replace(v3, version=4, topics={**{n: t for n, t in v3.topics.items() if n != "t5"},
                                        "t1": replace(v3.topics["t1"], min_isr=3)})
    stored = store.save(v4, content_parts(v4, cache), stored)
    store.client().hdel(f"console:snapshot:{cluster}:parts", "t:t3")  # (as above: not fetched if only the changes are)
    fourth = loader.load(cluster)
    assert fourth is not None and fourth.version == 4 and fourth.content_bytes() == v4.content_bytes()
    assert fourth.topics["t3"] is other.topics["t3"] and fourth.topics["t8"] is other.topics["t8"]
    assert "t5" not in fourth.topics and fourth.topics["t9"].min_isr == 2 and fourth.topics["t1"].min_isr == 3
    store.client().hset(f"console:snapshot:{cluster}:parts", "t:t3", parts[1]["t:t3"])
    # One whose version the log no longer reaches (a save that wrote everything starts it afresh)
    # reads everything, and gets the same.
    v5 = replace(v4, version=5, topics={**v4.topics, "t2": replace(v4.topics["t2"], min_isr=2)})
    stored = store.save(v5, content_parts(v5, cache), None)
    v6 = replace(v5, version=6, topics={**v5.topics, "t4": replace(v5.topics["t4"], min_isr=2)})
    store.save(v6, content_parts(v6, cache), stored)
    assert store.client().llen(f"console:snapshot:{cluster}:changes") == 1
    sixth = loader.load(cluster)
    assert sixth is not None and sixth.version == 6 and sixth.content_bytes() == v6.content_bytes()


def test_catching_up_over_missed_versions_follows_their_bases_in_order() -> None:
    def rec(version: int, base: int | None, changed: list[str], removed: list[str] = []) -> dict[str, object]:  # noqa: B006
        return {"version": version, "base": base, "changed": changed if base is not None else None, "removed": removed}

    log = [rec(7, 6, ["t:a"]), rec(6, 5, ["t:b"], ["t:a"]), rec(5, 4, ["t:a", "t:c"]), rec(4, None, [])]
    # a removed at 6 and written again at 7: fetched; b changed once; c from 5.
    assert loader.catch_up(log, 4, 7) == (["t:c", "t:b", "t:a"], [])
    assert loader.catch_up(log, 5, 6) == (["t:b"], ["t:a"])
    assert loader.catch_up(log, 6, 6) == ([], [])
    assert loader.catch_up(log, 3, 7) is None  # (before the save that wrote everything)
    assert loader.catch_up([rec(7, 6, ["t:a"]), rec(5, 4, ["t:c"])], 4, 7) is None  # (a record missing)
    assert loader.catch_up(log, 5, 8) is None


def test_whole_content_bytes_rewrite_everything(cluster: str) -> None:
    v1 = replace(snapshot(topic("a"), topic("b")), cluster=cluster, version=1)
    store.save(v1, v1.content_bytes())
    v2 = replace(v1, version=2, topics={"c": topic("c")})
    store.save(v2, v2.content_bytes())
    assert {k.decode() for k in store.client().hkeys(f"console:snapshot:{cluster}:parts")} == {"t:c"}
    loaded = loader.load(cluster)
    assert loaded is not None and list(loaded.topics) == ["c"] and loaded.content_bytes() == v2.content_bytes()


def test_groups_are_parts_of_their_own_and_a_changed_evaluation_rewrites_only_its_group(cluster: str) -> None:
    from console.snapshots.model import GroupState
    from console.snapshots.part_cache import GroupBytes

    def group(gid: str, offset: int) -> GroupState:
        return GroupState(group_id=gid, state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                          members=[], offsets={"t1:0": offset})

    topics_cache, groups_cache = TopicBytes(), GroupBytes()
    groups = {f"g{i}": group(f"g{i}", i) for i in range(20)} | {"odd/%<'\"é>": group("odd/%<'\"é>", 1)}
    v1 = replace(snapshot(topic("t1")), cluster=cluster, version=1, groups=groups)
    header, parts = content_parts(v1, topics_cache, groups_cache)
    assert b"g1" not in header and set(parts) >= {"t:t1", "g:g1", "g:odd/%<'\"é>"}
    stored = store.save(v1, (header, parts), None)
    first = loader.load(cluster)
    assert first is not None and first.content_bytes() == v1.content_bytes()

    # The evaluation renews one group's lag columns in place (as the watcher's does): only it is rewritten.
    g5 = v1.groups["g5"]
    g5.status, g5.lag_keys, g5.lag_status, g5.lag_seconds = "WARN", ["t1:0"], ["WARN"], [3.5]
    v2 = replace(v1, version=2, groups={k: g for k, g in v1.groups.items() if k != "g7"})
    parts2 = content_parts(v2, topics_cache, groups_cache)
    assert groups_cache.serialised == 1 and topics_cache.serialised == 0
    stored = store.save(v2, parts2, stored)
    record = store.client().get(f"console:snapshot:{cluster}:changed")
    assert record is not None and b'"changed":["g:g5"]' in record and b'"removed":["g:g7"]' in record
    second = loader.load(cluster)
    assert second is not None and second.content_bytes() == v2.content_bytes()
    assert second.groups["g5"].lag_status == ["WARN"] and second.groups["g1"] is first.groups["g1"]
    assert "g7" not in second.groups and second.topics["t1"] is first.topics["t1"]
    other = fresh_load(cluster)
    assert other is not None and other.content_bytes() == v2.content_bytes()
    # A group created (between two others by name) and one changed: in their places by name.
    v3 = replace(v2, version=3, groups={**v2.groups, "g10b": group("g10b", 3), "g2": group("g2", 9)})
    store.save(v3, content_parts(v3, topics_cache, groups_cache), stored)
    third = loader.load(cluster)
    assert third is not None and third.version == 3 and third.content_bytes() == v3.content_bytes()
    assert list(third.groups) == sorted(third.groups) and third.groups["g2"].offsets == {"t1:0": 9}
    assert third.groups["g1"] is other.groups["g1"]


def test_a_reader_parses_a_group_when_first_asked_for_and_once_for_every_version_that_keeps_it(cluster: str) -> None:
    """At 50,000 groups a sampling pass changes nearly every group within four or five versions;
    parsing them all took 0.3 to 0.7 s of each of those versions' reads in a web process, though
    the live pages but the groups list ask for no group (and that one, by default, for the fifty
    it shows). A reader holds each group's part and parses it when first asked (GroupsRead)."""
    from console.snapshots.model import GroupState
    from console.snapshots.part_cache import GroupBytes
    from console.snapshots.parts import GroupsRead
    from consumers_app import group_rows

    def group(gid: str, offset: int) -> GroupState:
        return GroupState(group_id=gid, state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                          members=[], offsets={"t1:0": offset})

    def parsed(snap: Snapshot) -> set[str]:
        assert isinstance(snap.groups, GroupsRead)
        return {gid for gid, held in snap.groups.held().items() if held.value is not None}

    topics_cache, groups_cache = TopicBytes(), GroupBytes()
    v1 = replace(snapshot(topic("t1")), cluster=cluster, version=1, groups={f"g{i:02}": group(f"g{i:02}", i) for i in range(20)})
    stored = store.save(v1, content_parts(v1, topics_cache, groups_cache), None)
    first = fresh_load(cluster)
    assert first is not None and parsed(first) == set() and len(first.groups) == 20 and "g03" in first.groups
    assert list(first.groups) == sorted(v1.groups)
    g3 = first.groups["g03"]
    assert g3 == v1.groups["g03"] and first.groups["g03"] is g3 and parsed(first) == {"g03"}
    # The default groups page (by name) parses the groups it shows, not the ones before them.
    page = group_rows.groups_page(first, page=2, per_page=5)
    assert [r["group"] for r in page.rows] == ["g05", "g06", "g07", "g08", "g09"]
    assert parsed(first) == {"g03", "g05", "g06", "g07", "g08", "g09"}
    page = group_rows.groups_page(first, page=1, per_page=3, descending=True)
    assert [r["group"] for r in page.rows] == ["g19", "g18", "g17"] and "g16" not in parsed(first)

    # Version 2 changes g05 and g11: their holders are new (not parsed); the others are the same
    # holders, parsed or not, so g03 is not parsed again.
    v2 = replace(v1, version=2, groups={**v1.groups, "g05": group("g05", 500), "g11": group("g11", 1100)})
    store.save(v2, content_parts(v2, topics_cache, groups_cache), stored)
    second = loader.load(cluster)
    assert second is not None and second.version == 2 and isinstance(second.groups, GroupsRead)
    assert second.groups["g03"] is g3 and parsed(second) == parsed(first) - {"g05"}
    assert second.groups.held()["g12"] is cast(GroupsRead, first.groups).held()["g12"]
    assert second.groups["g05"].offsets == {"t1:0": 500} and second.groups["g11"].offsets == {"t1:0": 1100}
    # Everything read equals what was stored (every group asked for), and the stored parts are what
    # a content made from the reader's snapshot holds.
    assert second.content_bytes() == v2.content_bytes() and dict(second.groups) == v2.groups
    assert {k: v for k, v in content_parts(second)[1].items() if k.startswith("g:")} == \
        {k.decode(): v for k, v in store.client().hgetall(f"console:snapshot:{cluster}:parts").items() if k.startswith(b"g:")}


def test_groups_are_stored_compressed_and_a_plain_json_group_still_reads(cluster: str) -> None:
    """A group's part is its JSON compressed (a quarter of its size: the watcher holds every one of
    them); a part stored by the version before, plain JSON, reads as it did."""
    import zlib

    import orjson

    from console.snapshots.encoding import CONTENT_OPTIONS
    from console.snapshots.model import GroupState, MemberState
    from console.snapshots.part_cache import GroupBytes
    from console.snapshots.parts import part_json

    offsets = {f"orders.v1:{p}": 1_000_000 + p for p in range(30)}
    g = GroupState(group_id="odd/%<'\"é>", state="Stable", protocol_type="consumer", group_type="classic", assignor="range",
                   members=[MemberState("m-1", "client <1>", "/10.0.0.1", [["orders.v1", p] for p in range(30)])],
                   offsets=offsets, status="OK", time_lag=0.0, lag_keys=list(offsets), lag_status=["OK"] * 30,
                   lag_seconds=[0.0] * 30)
    v1 = replace(snapshot(topic("orders.v1")), cluster=cluster, version=1, groups={g.group_id: g})
    header, parts = content_parts(v1, TopicBytes(), GroupBytes())
    raw = parts["g:" + g.group_id]
    plain = orjson.dumps(g, option=CONTENT_OPTIONS)
    assert raw[:1] != b"{" and part_json(raw) == plain and len(raw) * 3 < len(plain)
    store.save(v1, (header, parts), None)
    assert store.client().hget(f"console:snapshot:{cluster}:parts", "g:" + g.group_id) == raw
    loaded = fresh_load(cluster)
    assert loaded is not None and loaded.content_bytes() == v1.content_bytes()
    assert loaded.groups[g.group_id].offsets == offsets and loaded.groups[g.group_id].members[0].client_id == "client <1>"
    # As the versions before stored it: plain JSON, and compressed with no dictionary.
    for older in (plain, zlib.compress(plain, 1)):
        store.client().hset(f"console:snapshot:{cluster}:parts", "g:" + g.group_id, older)
        again = fresh_load(cluster)
        assert again is not None and again.content_bytes() == v1.content_bytes()


def test_a_group_part_that_cannot_be_read_is_a_clear_fault_when_asked_for_and_the_watcher_starts_afresh(cluster: str) -> None:
    """A group's part is parsed when something first asks for that group (GroupsRead). One this
    version cannot read (compressed with a dictionary it does not know: a later version's; or
    damaged) leaves the rest of the snapshot readable, and asking for that group raises
    PartUnreadable, a ConsoleError (pages and the API answer 503 with its sentence, a live socket
    sends it as a notice), not a server error. The watcher parses every group when it starts and
    takes such a store as holding nothing: it writes everything again."""
    import zlib

    from console.errors import ConsoleError, PartUnreadable
    from console.snapshots.part_cache import GroupBytes, TopicBytes
    from console.snapshots.parts import GroupsRead

    v1 = replace(snapshot(topic("orders.v1")), cluster=cluster, version=1)
    store.save(v1, content_parts(v1, TopicBytes(), GroupBytes()), None)
    other = zlib.compressobj(1, zdict=b'{"group_id":"a later version"}')
    for bad in (other.compress(b'{"group_id":"g"}') + other.flush(), b"x\x01 damaged", b'{"group_id": "no more"}'):
        store.client().hset(f"console:snapshot:{cluster}:parts", "g:g", bad)
        read = fresh_load(cluster)
        assert read is not None and isinstance(read.groups, GroupsRead)
        assert list(read.topics) == ["orders.v1"] and "g" in read.groups and len(read.groups) == 1
        with pytest.raises(PartUnreadable, match="stored part of consumer group 'g' cannot be read") as raised:
            read.groups["g"]
        assert isinstance(raised.value, ConsoleError) and raised.value.http_status == 503
        watcher = started_watcher(cluster)
        assert watcher.previous is None and not watcher.publisher.saved_once
    store.client().hset(f"console:snapshot:{cluster}:parts", "g:g", b'{"group_id":"g","state":"Empty","protocol_type":"consumer",'
                        b'"group_type":"classic","assignor":"","members":[],"offsets":{"orders.v1:0":5}}')
    watcher = started_watcher(cluster, watcher)  # (readable again: the watcher holds it, every group parsed)
    assert watcher.previous is not None and type(watcher.previous.groups) is dict
    held = loader.cached(cluster)  # (the store's cached snapshot, shared in the process, left as read)
    assert held is not None and held is not watcher.previous and isinstance(held.groups, GroupsRead)
    assert watcher.previous.groups["g"].offsets == {"orders.v1:0": 5}


def test_a_snapshot_stored_by_an_older_version_reads_as_none(cluster: str) -> None:
    # (Before groups were parts: a header without the format mark; the watcher then starts afresh
    # instead of taking an empty topic list for deletions.)
    store.client().set(f"console:snapshot:{cluster}", b'{"cluster":"parts","groups":{}}')
    store.client().set(f"console:snapshot:{cluster}:stamp", replace(snapshot(), cluster=cluster, version=3).stamp_bytes())
    assert fresh_load(cluster) is None


def test_a_save_streams_one_transaction_that_is_applied_whole_or_not_at_all(cluster: str) -> None:
    """store._transaction sends MULTI, each command packed on its own, EXEC: large saves are not
    packed into one buffer first, and a transaction Redis refuses leaves nothing written and the
    connection pool fit for the next save."""
    import redis

    key = f"console:test:{cluster}:tx"
    client = store.client()
    client.delete(key, key + ":s")
    fields = [(f"g:group-{i}", b"x" * (i % 50)) for i in range(6000)]
    replies = store._transaction(lambda: (("HSET", key, *[v for f in fields[i:i + 2000] for v in f])
                                          for i in range(0, 6000, 2000)))
    assert replies == [2000, 2000, 2000] and client.hlen(key) == 6000
    assert client.hget(key, "g:group-123") == b"x" * 23
    with pytest.raises(redis.ResponseError):
        store._transaction(lambda: iter([("SET", key + ":s", "new"), ("NO-SUCH-COMMAND", "x")]))
    assert client.get(key + ":s") is None  # (refused at EXEC: nothing of it applied)
    snap = replace(snapshot(topic("orders")), cluster=cluster, version=1)
    assert store.save(snap, content_parts(snap)) is not None
    loaded = fresh_load(cluster)
    assert loaded is not None and loaded.content_bytes() == snap.content_bytes()
    client.delete(key)


def test_a_save_on_a_connection_redis_dropped_goes_through_on_a_new_one(cluster: str) -> None:
    """After a Redis restart the pooled connections are dead: the save is sent again once on a new
    connection, as the transaction pipeline's retry did, instead of failing the watcher's cycle."""
    client = store.client()
    client.ping()
    for conn in list(client.connection_pool._available_connections):  # type: ignore[attr-defined]
        conn._sock.shutdown(socket.SHUT_RDWR)  # (what a restarted Redis leaves: a socket that fails on use)
    snap = replace(snapshot(topic("orders")), cluster=cluster, version=1)
    assert store.save(snap, content_parts(snap)) is not None
    loaded = fresh_load(cluster)
    assert loaded is not None and loaded.content_bytes() == snap.content_bytes()


def test_a_redis_that_lost_the_snapshot_between_two_saves_gets_all_of_it_again(redis_server: str) -> None:
    """Redis restarted or flushed between two saves, none of them refused: the watcher's next save
    finds the snapshot gone and the one after writes all of it again (every topic, changed or not),
    instead of a stamp with no content, or only the parts that changed since."""
    from django.test import override_settings

    from bench.simulate import Model, SimGateway
    from console.watcher.loop import ClusterWatcher

    cluster = "store-lost"
    model = Model(partitions=60, groups=4, brokers=3, per_topic=6, seed=3)
    with override_settings(ANALYTICS_SAMPLES=False):
        w = ClusterWatcher(cluster, "test", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
        w.cycle()
        w.sample_offsets()
        w.cycle()

        before = fresh_load(cluster)
        assert before is not None and len(before.topics) == 10
        redis_client = store.client()
        for key in list(redis_client.scan_iter(f"console:snapshot:{cluster}*")):
            redis_client.delete(key)  # (the lease and the rest stay: nothing tells the watcher)
        model.step(0.2, 1.0)  # (a few partitions move: only their topics change)
        w.cycle()  # finds the snapshot gone: stores nothing
        assert not w.publisher.saved_once
        w.cycle()
        after = fresh_load(cluster)
        assert after is not None and after.topics.keys() == before.topics.keys()
        w.cycle()  # (an idle cycle stores only the stamp, on the whole snapshot)
        idle = fresh_load(cluster)
        assert idle is not None and idle.topics.keys() == before.topics.keys()


def test_a_version_read_is_frozen_out_of_the_collectors_sight_and_collected_every_interval(cluster: str,
                                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    v1 = replace(snapshot(*(topic(f"t{i}", part(0, end_offset=i)) for i in range(20))), cluster=cluster, version=1)
    store.save(v1, content_parts(v1, TopicBytes()), None)
    gc.unfreeze()
    try:
        loaded = loader.load(cluster)
        assert loaded is not None
        # (what the read made is in the permanent generation: no collection walks it)
        assert gc.get_freeze_count() > 0
        assert not any(o is loaded.topics["t3"].partitions for g in (0, 1, 2) for o in gc.get_objects(generation=g))
        collected: list[int] = []
        monkeypatch.setattr(loader, "_collected", [0.0])  # (the interval is over)

        def collect(*args: object) -> int:
            collected.append(1)
            return 0

        monkeypatch.setattr(gc, "collect", collect)
        loader._cache.pop(cluster, None)
        loader.load(cluster)
        assert collected == [1] and gc.get_freeze_count() > 0
        loader._cache.pop(cluster, None)
        loader.load(cluster)
        assert collected == [1]  # (not again before the interval)
        # The read's objects are frozen while the collector is still paused (enabled first, it walked
        # them once more before the freeze: 0.1 to 0.2 s a version at 300,000 partitions).
        enabled_at_freeze: list[bool] = []
        freeze = gc.freeze

        def noting_freeze() -> None:
            enabled_at_freeze.append(gc.isenabled())
            freeze()

        monkeypatch.setattr(gc, "freeze", noting_freeze)
        loader._cache.pop(cluster, None)
        assert gc.isenabled()
        loader.load(cluster)
        assert enabled_at_freeze == [False] and gc.isenabled()
    finally:
        gc.unfreeze()


def test_topics_are_read_from_their_summaries_and_a_topic_part_that_cannot_be_read_is_a_clear_fault(cluster: str) -> None:
    """A topic's stored part starts with its summary (its fields and tally): a reading process
    takes the topic from it and parses the partitions when asked for them (StoredTopic). A part
    whose partitions cannot be read leaves the rest readable, the overview's counts included, and
    asking for its partitions raises PartUnreadable (503 with its sentence, not a server error); a
    summary that cannot be read makes the snapshot unreadable (StoreUnreadable). The watcher, which
    parses every topic when it starts, takes such a store as holding nothing and writes it again."""
    from console.errors import ConsoleError, PartUnreadable
    from console.snapshots.model import TopicState
    from console.snapshots.part_cache import GroupBytes
    from console.snapshots.parts import StoredTopic

    layout = topic("orders.v1", part(0, leader=1), part(1, leader=2, isr=(2,)), min_isr=2)
    v1 = replace(snapshot(layout, topic("other")), cluster=cluster, version=1)
    store.save(v1, content_parts(v1, TopicBytes(), GroupBytes()), None)
    read = fresh_load(cluster)
    assert read is not None and type(read.topics["orders.v1"]) is StoredTopic
    assert read.counts() == v1.counts() and not [t for t in read.topics.values() if "partitions" in vars(t)]
    assert read.topics == v1.topics
    key = f"console:snapshot:{cluster}:parts"
    good = cast(bytes, store.client().hget(key, "t:orders.v1"))
    summary_end = 5 + int.from_bytes(good[1:5], "big")
    store.client().hset(key, "t:orders.v1", good[:summary_end] + b"L damaged")
    read = fresh_load(cluster)
    assert read is not None and read.counts() == v1.counts() and read.topics["other"].partitions == v1.topics["other"].partitions
    with pytest.raises(PartUnreadable, match="stored part of topic 'orders.v1' cannot be read") as raised:
        len(read.topics["orders.v1"].partitions)
    assert isinstance(raised.value, ConsoleError) and raised.value.http_status == 503
    watcher = started_watcher(cluster)
    assert watcher.previous is None and not watcher.publisher.saved_once
    # A summary this version cannot read: the snapshot as a whole is unreadable.
    store.client().hset(key, "t:orders.v1", b"S\x00\x00\x00\x05[1,2]" + good[summary_end:])
    with pytest.raises(store.StoreUnreadable):
        fresh_load(cluster)
    # Readable again: the watcher holds every topic as a plain TopicState, its partitions parsed.
    store.client().hset(key, "t:orders.v1", good)
    watcher = started_watcher(cluster, watcher)
    assert watcher.previous is not None and watcher.previous.topics == v1.topics
    assert all(type(t) is TopicState for t in watcher.previous.topics.values())
