"""The watcher's group evaluation (consumers_app/group_evaluation.py: windows and time tables as columns, groups
skipped when caught up and unchanged) against the reference written plainly with PartitionWindow,
evaluate_partition, evaluate_group, OffsetTimeTable and time_lag, every group at every sample."""

from __future__ import annotations

import random

import pytest
from django.conf import settings

from console import snapshots
from console.snapshots.model import GroupState, MemberState
from consumers_app import group_evaluation
from consumers_app.group_evaluation import GroupEvaluation
from consumers_app.lag_windows import WindowColumns
from consumers_app.lagstatus import PartitionResult, PartitionWindow, evaluate_group, evaluate_partition
from consumers_app.time_tables import TimeColumns
from consumers_app.timelag import OffsetTimeTable, group_time_lag, time_lag


class Reference:
    def __init__(self, min_distance: float, forget_after: float) -> None:
        self.min_distance = min_distance
        self.forget_after = forget_after
        self.windows: dict[tuple[str, str, int], PartitionWindow] = {}
        self.tables: dict[tuple[str, int], OffsetTimeTable] = {}
        self.last_seen: dict[tuple[str, int], float] = {}

    def evaluate(self, groups: dict[str, GroupState], ends: dict[tuple[str, int], int], now: float) -> dict[str, tuple]:
        if ends:  # a partition no sample listed for a while loses its table
            self.last_seen.update(dict.fromkeys(ends, now))
            for tp in [tp for tp, seen in self.last_seen.items() if seen < now - self.forget_after]:
                del self.last_seen[tp]
                self.tables.pop(tp, None)
        for tp, offset in ends.items():
            self.tables.setdefault(tp, OffsetTimeTable()).add(offset, now)
        self.windows = {k: w for k, w in self.windows.items() if k[0] in groups}
        out = {}
        for g in groups.values():
            results, lags, entries = {}, [], {}
            for key, committed in g.offsets.items():
                topic, _, part = key.rpartition(":")
                tp = (topic, int(part))
                if tp not in ends:
                    continue
                window = self.windows.setdefault((g.group_id, *tp), PartitionWindow(min_distance=self.min_distance))
                window.record(committed, ends[tp], now, committing=bool(g.members))
                # A share group's partition Kafka reports with no lag is OK, whatever its window says.
                status = "OK" if g.broker_lag.get(key) == 0 else evaluate_partition(window, now)
                seconds = time_lag(self.tables[tp], committed, now)
                lags.append(seconds)
                results[tp] = PartitionResult(status, g.broker_lag.get(key, max(0, ends[tp] - committed)), window.fullness)
                entries[key] = {"status": status, "time_lag": None if seconds is None else round(seconds, 3)}
            worst = group_time_lag(lags)
            out[g.group_id] = (evaluate_group(results).status if results else None,
                               None if worst is None else round(worst, 3), entries)
        return out


def judged_as(groups: dict[str, GroupState], expected: dict[str, tuple], where: tuple) -> set[str]:
    """Assert each group's status, time lag and per-partition entries are the reference's; their statuses."""
    for gid, g in groups.items():
        status, worst, entries = expected[gid]
        assert (g.status, g.time_lag) == (status, worst), (*where, gid)
        for key, entry in entries.items():
            assert g.lag_of()[key] == entry, (*where, gid, key)
    return {expected[gid][0] for gid in groups}


@pytest.mark.parametrize("seed", range(25))
def test_the_evaluation_equals_the_plain_reference_over_random_samples(seed, monkeypatch):
    replay(seed, monkeypatch)


@pytest.mark.parametrize("seed", range(10))
def test_the_evaluation_in_batches_of_a_few_windows_equals_the_reference(seed, monkeypatch):
    """Groups are recorded and judged in batches of about BATCH_WINDOWS windows (a batch of all
    1.5 million at 50,000 groups was 100 MB of each pass's peak): the answers are the same, and no
    batch holds more than that plus one group's windows."""
    monkeypatch.setattr(group_evaluation, "BATCH_WINDOWS", 3)
    recorded: list[int] = []
    record = WindowColumns.record

    def counted(self, rows, *args, **kwargs):
        recorded.append(len(rows))
        return record(self, rows, *args, **kwargs)

    monkeypatch.setattr(WindowColumns, "record", counted)
    replay(seed, monkeypatch)
    assert recorded and max(recorded) <= 3 + 4 - 1  # (a group has at most 4 partitions here)
    assert len(recorded) > 120  # more than one batch a sample


def test_the_random_samples_make_tables_be_forgotten_and_rows_handed_on(monkeypatch):
    """The sequences are strong enough: in most of them tables were forgotten and rows handed on."""
    generations = [replay(seed, monkeypatch) for seed in range(10)]
    assert sum(g > 0 for g in generations) >= 5, generations


def replay(seed: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Random samples through the evaluation and the reference; the time tables' generation at the end."""
    monkeypatch.setattr(snapshots, "append_lag_history", lambda *args, **kwargs: True)
    rng = random.Random(seed)
    evaluation = GroupEvaluation("c", incremental=True, emit=lambda rows: None)
    monkeypatch.setattr(evaluation, "_record_rebalances", lambda ended: None)  # (rows in the database: not this test's)
    forget_after = 8.0  # short, so topics hidden for a few samples lose their tables (and rows are handed on)
    evaluation._time_tables = TimeColumns(forget_after=forget_after)
    reference = Reference(settings.WATCHER_OFFSETS_INTERVAL * 0.5, forget_after)
    hidden: dict[str, int] = {}  # topics left out of the next so many samples (a leader away, a deleted topic)
    topics = {f"t{i}": rng.randint(1, 4) for i in range(3)}
    ends = {(t, p): rng.randint(0, 50) for t, n in topics.items() for p in range(n)}
    model: dict[str, dict] = {}  # group -> {"offsets": {(t, p): committed}, "members": int}
    for i in range(rng.randint(2, 6)):
        t = rng.choice(sorted(topics))
        model[f"g{i}"] = {"offsets": {(t, p): ends[(t, p)] for p in range(topics[t])}, "members": rng.randint(0, 2),
                          "share": rng.random() < 0.3}
    states: dict[str, GroupState] = {}
    before = None
    now = 1000.0
    statuses, skipped = set(), 0
    for step in range(120):
        now += rng.choice([1.0, 3.0, 3.0, 3.0, 10.0, 40.0])
        for tp in ends:
            if rng.random() < 0.3:
                ends[tp] += rng.randint(1, 30)
        for m in model.values():
            if m.get("share"):  # Kafka's lag figure: none, nothing waiting, or what the offsets say
                m["broker_lag"] = {tp: rng.choice([0, 0, max(0, ends[tp] - c)]) for tp, c in m["offsets"].items()
                                   if rng.random() < 0.8}
            roll = rng.random()
            if roll < 0.3:
                m["offsets"] = {tp: min(ends[tp], c + rng.randint(0, 40)) for tp, c in m["offsets"].items()}
            elif roll < 0.4:
                m["offsets"] = {tp: ends[tp] for tp in m["offsets"]}
            elif roll < 0.43:
                m["offsets"] = {tp: max(0, c - 20) for tp, c in m["offsets"].items()}  # a reset back
            elif roll < 0.46:
                m["members"] = rng.randint(0, 2)
        if rng.random() < 0.05:  # a group goes, another comes
            model.pop(rng.choice(sorted(model)))
            t = rng.choice(sorted(topics))
            model[f"g{step}-new"] = {"offsets": {(t, p): 0 for p in range(topics[t])}, "members": 1}
        # The sample: some partitions' end offsets missing now and then; a state kept when unchanged.
        if rng.random() < 0.08:
            hidden[rng.choice(sorted(topics))] = rng.randint(1, 5)
        seen_ends = {tp: e for tp, e in ends.items() if rng.random() > 0.03 and hidden.get(tp[0], 0) == 0}
        hidden = {t: n - 1 for t, n in hidden.items() if n > 1}
        groups = {}
        for gid, m in model.items():
            offsets = {f"{t}:{p}": c for (t, p), c in sorted(m["offsets"].items())}
            broker_lag = {f"{t}:{p}": lag for (t, p), lag in sorted(m.get("broker_lag", {}).items())}
            last = states.get(gid)
            if last is not None and last.offsets == offsets and len(last.members) == m["members"] and last.broker_lag == broker_lag:
                groups[gid] = last
                continue
            members = [MemberState(f"{gid}-{k}", "c", "/h", []) for k in range(m["members"])]
            groups[gid] = GroupState(gid, "Stable" if members else "Empty", "consumer", "share" if m.get("share") else "classic",
                                     "range", members, offsets, broker_lag=broker_lag)
        expected = reference.evaluate(groups, seen_ends, now)
        evaluation.evaluate(groups, before, seen_ends, now)
        skipped = int(evaluation.stats.get("groups_skipped", 0))
        statuses |= judged_as(groups, expected, (seed, step))
        before, states = groups, groups
    assert "OK" in statuses and len(statuses) >= 2
    assert not any(m.get("share") for m in model.values()) or any(g.broker_lag for g in states.values())
    assert skipped > 0  # the skipping path was taken, and gave the same answers
    return evaluation._time_tables.generation


def test_groups_on_the_same_partitions_share_one_array_of_time_table_rows(monkeypatch):
    """The time tables' rows of a group's partitions are read once per set of partitions and
    generation of the tables, and shared by the groups that commit on that set (50,000 lists of 30
    rows were 15 MB at 50,000 groups); a generation that handed rows on reads them again."""
    monkeypatch.setattr(snapshots, "append_lag_history", lambda *args, **kwargs: True)
    evaluation = GroupEvaluation("c", incremental=False, emit=lambda rows: None)
    monkeypatch.setattr(evaluation, "_record_rebalances", lambda ended: None)
    evaluation._time_tables = TimeColumns(forget_after=5.0)

    def group(gid: str, topic: str, committed: int) -> GroupState:
        return GroupState(gid, "Stable", "consumer", "classic", "range", [MemberState(f"{gid}-m", "c", "/h", [])],
                          {f"{topic}:{p}": committed for p in range(3)})

    ends = {(t, p): 100 for t in ("a", "b") for p in range(3)}
    groups = {"g1": group("g1", "a", 50), "g2": group("g2", "a", 60), "g3": group("g3", "b", 70)}
    evaluation.evaluate(groups, None, ends, 1000.0)
    rows = {gid: evaluation._entries_cache[gid].time_rows for gid in groups}
    tables = evaluation._time_tables
    assert rows["g1"] is rows["g2"] and rows["g1"] is not rows["g3"]
    assert list(rows["g1"]) == [tables.row(("a", p)) for p in range(3)]
    assert list(rows["g3"]) == [tables.row(("b", p)) for p in range(3)]
    # Topic "a" is left out of two samples long enough to lose its tables: its rows go to "c"'s
    # partitions, and when "a" is back its groups read their new rows.
    only_b = {tp: e for tp, e in ends.items() if tp[0] == "b"}
    evaluation.evaluate({"g3": groups["g3"]}, None, only_b, 1003.0)
    evaluation.evaluate({"g3": groups["g3"]}, None, {**only_b, **{("c", p): 5 for p in range(3)}}, 1010.0)
    assert tables.generation > 0 and tables.row(("a", 0)) is None
    again = {gid: group(gid, "a", 80) for gid in ("g1", "g2")}
    evaluation.evaluate(again, None, {**ends, **{("c", p): 5 for p in range(3)}}, 1013.0)
    fresh = evaluation._entries_cache["g1"].time_rows
    assert fresh is evaluation._entries_cache["g2"].time_rows and fresh is not rows["g1"]
    assert list(fresh) == [tables.row(("a", p)) for p in range(3)]


def test_the_logs_ends_are_stamped_with_when_they_were_read_not_when_the_groups_were(monkeypatch):
    """A log written at 10 records a second, read at each sample 3 s before the groups are: a group
    that stopped committing at offset 1,000 (the end at t=100) is 20 s behind at t=120, not 17."""
    monkeypatch.setattr(snapshots, "append_lag_history", lambda *args, **kwargs: True)
    evaluation = GroupEvaluation("c", incremental=False, emit=lambda rows: None)
    monkeypatch.setattr(evaluation, "_record_rebalances", lambda ended: None)
    groups = {"g": GroupState("g", "Empty", "consumer", "classic", "", [], {"t:0": 1_000})}
    for read_at in (100.0, 105.0, 110.0, 117.0):
        evaluation.evaluate(groups, None, {("t", 0): int(1_000 + 10 * (read_at - 100))}, read_at + 3, ends_at=read_at)
    assert groups["g"].time_lag == pytest.approx(20.0)
    unstamped = GroupEvaluation("c", incremental=False, emit=lambda rows: None)
    monkeypatch.setattr(unstamped, "_record_rebalances", lambda ended: None)
    for read_at in (100.0, 105.0, 110.0, 117.0):
        unstamped.evaluate(groups, None, {("t", 0): int(1_000 + 10 * (read_at - 100))}, read_at + 3)
    assert groups["g"].time_lag == pytest.approx(17.0)  # (what stamping the ends with the groups' time said)


def test_the_evaluation_keeps_no_member_objects_for_groups_carried_over_and_still_sees_a_rebalance(monkeypatch):
    """The rebalance trackers take a group's members over its list of member states: no Member
    object, nor a mapping of them, is kept per group (17 MB at 50,000 groups), and a group whose
    members change is still told to have rebalanced."""
    import gc

    from consumers_app.rebalance import Member

    monkeypatch.setattr(snapshots, "append_lag_history", lambda *args, **kwargs: True)
    ended: list = []
    evaluation = GroupEvaluation("c", incremental=True, emit=lambda rows: None)
    monkeypatch.setattr(evaluation, "_record_rebalances", lambda found: ended.extend(found))

    def group(gid: str, members: int, generation: int) -> GroupState:
        return GroupState(gid, "Stable", "consumer", "classic", "range",
                          [MemberState(f"{gid}-m{k}", "c", "/h", (("a", k),)) for k in range(members)],
                          {"a:0": 5, "a:1": 5}, generation=generation)

    def members_alive() -> int:
        gc.collect()
        return sum(type(o) is Member for o in gc.get_objects())

    ends = {("a", 0): 5, ("a", 1): 5}
    groups = {f"g{i}": group(f"g{i}", 2, 1) for i in range(50)}
    alive = members_alive()  # (other tests' may be)
    evaluation.evaluate(groups, None, ends, 1000.0)
    evaluation.evaluate(groups, groups, ends, 1003.0)  # every state carried over
    assert members_alive() <= alive
    changed = {**groups, "g7": group("g7", 1, 2)}  # a member left, a new generation
    evaluation.evaluate(changed, groups, ends, 1006.0)
    assert [(gid, r.trigger, r.generation_before, r.generation_after, r.missed) for gid, r in ended] == [
        ("g7", "member left or timed out", 1, 2, True)]
    assert [m.member_id for m in ended[0][1].left] == ["g7-m1"]


def test_time_lags_kept_in_milliseconds_read_back_as_the_rounded_seconds() -> None:
    """A group's time lags are kept in whole milliseconds (what the evaluation rounds them to), 4
    bytes each while all are under 24 days, 8 past that; each reads back as the very float it was
    rounded to, unknown as None, through JSON and a pickle alike."""
    import pickle

    from consumers_app.lag_values import LagSeconds

    rng = random.Random(5)
    values = [round(rng.random() * rng.choice([1.0, 90.0, 86_400.0, 1_000_000.0]), 3) for _ in range(20_000)]
    held = LagSeconds([*values, None, 0.0])
    assert held.itemsize == 4
    assert list(held) == [*values, None, 0.0] == held.json_value() == held[:]
    assert held[0] == values[0] and held[len(values)] is None
    again = pickle.loads(pickle.dumps(held))
    assert type(again) is LagSeconds and list(again) == list(held)
    far = LagSeconds([3_000_000.125, None])  # 34 days behind
    assert far.itemsize == 8 and list(far) == [3_000_000.125, None]


@pytest.mark.parametrize("seed", range(20))
def test_steady_batches_recorded_as_the_last_sample_equal_the_reference(seed, monkeypatch):
    """The sampler's path: committed offsets as Commits, end offsets as PassOffsets whose unchanged
    topics keep the last answer's array, a group's state kept while it is described and committed
    as before. Over long idle stretches (nothing moves), then groups falling behind, commits,
    members leaving, partitions missing from an answer: a batch whose groups are the last sample's
    caught-up states, on the same arrays, is recorded as the last sample recorded it (`_Steady`), and
    the statuses, time lags and every window equal the plain reference's, which evaluates every
    group at every sample."""
    from array import array

    from console.snapshots.encoding import Commits, GroupPartitions
    from console.watcher.pass_offsets import PassOffsets, topic_runs

    monkeypatch.setattr(snapshots, "append_lag_history", lambda *args, **kwargs: True)
    if seed % 2:
        monkeypatch.setattr(group_evaluation, "BATCH_WINDOWS", 4)  # several batches: some steady, some not
    rng = random.Random(seed)
    evaluation = GroupEvaluation("c", incremental=True, emit=lambda rows: None)
    monkeypatch.setattr(evaluation, "_record_rebalances", lambda ended: None)
    reference = Reference(settings.WATCHER_OFFSETS_INTERVAL * 0.5, evaluation._time_tables.forget_after)
    topics = {f"t{i}": rng.randint(1, 4) for i in range(4)}
    asked = [(t, p) for t, n in topics.items() for p in range(n)]
    runs = topic_runs(asked)
    ends = {tp: rng.randint(0, 50) for tp in asked}
    model = {f"g{i}": {"topic": rng.choice(sorted(topics)), "members": rng.randint(1, 2)} for i in range(rng.randint(3, 7))}
    for m in model.values():
        m["offsets"] = {(m["topic"], p): ends[(m["topic"], p)] for p in range(topics[m["topic"]])}
    states: dict[str, GroupState] = {}
    before = None
    previous: PassOffsets | None = None
    now = 1000.0
    statuses = set()
    for step in range(150):
        now += rng.choice([3.0, 3.0, 3.0, 10.0])
        idle = (step // 12) % 2 == 0  # twelve samples with nothing moving, twelve with changes
        if idle and step % 12 == 0 and rng.random() < 0.7:  # (every group caught up first: a steady batch)
            for m in model.values():
                m["offsets"] = {tp: ends[tp] for tp in m["offsets"]}
        if not idle:
            for tp in ends:
                if rng.random() < 0.3:
                    ends[tp] += rng.randint(1, 30)
            for m in model.values():
                roll = rng.random()
                if roll < 0.25:
                    m["offsets"] = {tp: ends[tp] for tp in m["offsets"]}  # caught up
                elif roll < 0.4:
                    m["offsets"] = {tp: min(ends[tp], c + rng.randint(0, 20)) for tp, c in m["offsets"].items()}
                elif roll < 0.45:
                    m["members"] = rng.randint(0, 2)
        whole = idle or rng.random() < 0.85
        answer = {tp: e for tp, e in ends.items() if whole or rng.random() < 0.7}
        got = PassOffsets.of(asked, runs, answer, previous if previous is not None and previous.keys_ is asked else None)
        previous = got if got.keys_ is asked else None
        groups = {}
        for gid, m in model.items():
            last = states.get(gid)
            ordered = sorted(m["offsets"].items())
            if last is not None and list(last.offsets.committed) == [c for _tp, c in ordered] and len(last.members) == m["members"]:
                groups[gid] = last  # (described and committed as before: the sampler hands on the same state)
                continue
            tps = tuple(tp for tp, _c in ordered)
            offsets = Commits(GroupPartitions(tuple(f"{t}:{p}" for t, p in tps), tps), array("q", [c for _tp, c in ordered]))
            members = [MemberState(f"{gid}-{k}", "c", "/h", []) for k in range(m["members"])]
            groups[gid] = GroupState(gid, "Stable" if members else "Empty", "consumer", "classic", "range", members, offsets)
        expected = reference.evaluate(groups, dict(answer), now)
        evaluation.evaluate(groups, before, got, now)
        statuses |= judged_as(groups, expected, (seed, step))
        for gid, g in groups.items():
            # (every group's describe observed at this sample: a rebalance missed between two is dated from it)
            assert evaluation._trackers[gid].last.at == now, (seed, step, gid)
            run = evaluation._history.runs[gid]  # ... and its lag history given this sample's point
            assert (run.skipped or run.written)[0] == round(now, 2), (seed, step, gid)
            for tp in g.offsets.partitions.tps:
                row = int(evaluation._windows.rows_of(gid, g.offsets.partitions.tps)[g.offsets.partitions.tps.index(tp)])
                if (gid, *tp) in reference.windows:
                    assert evaluation._windows.window(row) == reference.windows[(gid, *tp)], (seed, step, gid, tp)
        before, states = groups, groups
    assert evaluation.steady_batches >= 10, evaluation.steady_batches  # the steady path was taken ...
    assert statuses - {"OK"}, statuses  # ... and groups fell behind after it
