"""The alert evaluator on hand-made snapshots, with the test database and Redis: durations, resolving,
missing reads, restarts, grouping, silences, repeats and acknowledgement, each condition's path
from the watcher, and the rule preview."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from alerts_app import evaluator as evaluator_module
from alerts_app.defaults import DEFAULTS
from alerts_app.evaluation import preview
from alerts_app.evaluator import Evaluator
from alerts_app.models import Alert, AlertChannel, AlertRule, Delivery, Notification, Silence
from console.errors import BadParameter
from console.snapshots import BrokerState, GroupState, PartitionState, Snapshot, TopicState

pytestmark = pytest.mark.django_db
CLUSTER = "ev"
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(autouse=True)
def _every_cycle(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Rules, silences and repeats looked at on every evaluation (not once a second)."""
    monkeypatch.setattr(evaluator_module, "GENERATION_EVERY", 0.0)
    monkeypatch.setattr(evaluator_module, "SWEEP_EVERY", 0.0)
    yield


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hook() -> AlertChannel:
    return AlertChannel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/")


def rule(condition: str, channel: AlertChannel | None = None, **fields: Any) -> AlertRule:
    r = AlertRule.objects.create(cluster=CLUSTER, name=fields.pop("name", condition), condition=condition, **fields)
    if channel is not None:
        r.channels.add(channel)
    return r


def snap(offline: int = 0, under: int = 0, partitions: int = 50, reachable: bool = True, down: tuple[int, ...] = ()) -> Snapshot:
    parts = []
    for p in range(partitions):
        if p < offline:
            parts.append(PartitionState(p, -1, [1, 2], [], [1, 2]))
        elif p < offline + under:
            parts.append(PartitionState(p, 1, [1, 2], [1], []))
        else:
            parts.append(PartitionState(p, 1, [1, 2], [1, 2], [], 0, 10))
    return Snapshot(CLUSTER, reachable=reachable, controller_id=1,
                    brokers={i: BrokerState(i, "127.0.0.1", 9090 + i, None, i not in down) for i in (1, 2, 3)},
                    topics={} if not reachable else {"orders": TopicState("orders", False, parts, min_isr=2, produce_rate=1.0)})


def notes(r: AlertRule, kind: str | None = None) -> list[Notification]:
    qs = Notification.objects.filter(rule=r).order_by("created_at")
    return list(qs.filter(kind=kind) if kind else qs)


def states(r: AlertRule) -> dict[str, str]:
    return {a.key: a.state for a in Alert.objects.filter(rule=r)}


def test_an_alert_fires_after_its_duration_not_before(clock: Clock, hook: AlertChannel) -> None:
    r = rule("offline", hook, for_seconds=30, severity="critical")
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(offline=1))
    assert states(r) == {"partition:orders:0": "pending"}
    clock.t += 29
    ev.snapshot(snap(offline=1))
    assert states(r) == {"partition:orders:0": "pending"} and notes(r) == []
    clock.t += 1
    ev.snapshot(snap(offline=1))
    assert states(r) == {"partition:orders:0": "firing"}
    [n] = notes(r)
    assert n.kind == "firing" and n.payload["alerts"][0]["key"] == "partition:orders:0"
    assert n.payload["rule"]["condition"] == "offline" and n.payload["severity"] == "critical" and n.payload["id"] == str(n.id)
    assert [(d.channel_id, d.state) for d in Delivery.objects.filter(notification=n)] == [(hook.id, "pending")]


def test_a_condition_that_clears_while_pending_leaves_nothing(clock: Clock, hook: AlertChannel) -> None:
    r = rule("offline", hook, for_seconds=30)
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(offline=1))
    clock.t += 10
    ev.snapshot(snap())
    clock.t += 30
    ev.snapshot(snap())
    assert states(r) == {} and notes(r) == []


def test_an_alert_resolves_when_its_condition_clears_and_says_so_once(clock: Clock, hook: AlertChannel) -> None:
    r = rule("under_replicated", hook)
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(under=2))
    clock.t += 5
    ev.snapshot(snap())
    clock.t += 5
    ev.snapshot(snap())
    assert states(r) == {"partition:orders:0": "resolved", "partition:orders:1": "resolved"}
    resolved = notes(r, "resolved")
    assert len(resolved) == 1 and {a["state"] for a in resolved[0].payload["alerts"]} == {"resolved"}
    assert all(a["resolved_at"] for a in resolved[0].payload["alerts"])


def test_an_unreachable_snapshot_fires_and_resolves_nothing(clock: Clock, hook: AlertChannel) -> None:
    firing = rule("under_replicated", hook, name="urp")
    pending = rule("offline", hook, name="offline", for_seconds=10)
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(offline=1, under=1))
    assert states(firing) == {"partition:orders:1": "firing"} and states(pending) == {"partition:orders:0": "pending"}
    clock.t += 20
    ev.snapshot(snap(reachable=False))  # (its duration has passed, but this cycle could not read)
    assert states(firing) == {"partition:orders:1": "firing"} and states(pending) == {"partition:orders:0": "pending"}
    assert len(notes(firing)) == 1 and notes(pending) == []
    clock.t += 1
    ev.snapshot(snap(offline=1))
    assert states(firing) == {"partition:orders:1": "resolved"} and states(pending) == {"partition:orders:0": "firing"}


def test_broker_down_follows_the_watcher_even_when_the_cluster_is_unreachable(clock: Clock, hook: AlertChannel) -> None:
    r = rule("broker_down", hook)
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap())
    ev.snapshot(snap(reachable=False, down=(2,)))
    assert states(r) == {"broker:2": "firing"}
    assert notes(r)[0].payload["alerts"][0]["message"] == "Broker 2 (127.0.0.1:9092) has left the cluster."


def test_a_restarted_evaluator_sends_nothing_again_and_carries_on(clock: Clock, hook: AlertChannel) -> None:
    fired = rule("under_replicated", hook, name="urp")
    waiting = rule("offline", hook, name="offline", for_seconds=30)
    Evaluator(CLUSTER, clock=clock).snapshot(snap(offline=1, under=1))
    assert len(notes(fired)) == 1
    clock.t += 30
    again = Evaluator(CLUSTER, clock=clock)  # (a new process: what it knows is in the database)
    again.snapshot(snap(offline=1, under=1))
    assert len(notes(fired)) == 1 and states(fired) == {"partition:orders:1": "firing"}
    assert states(waiting) == {"partition:orders:0": "firing"} and len(notes(waiting)) == 1  # (its 30 s counted from before)
    clock.t += 1
    Evaluator(CLUSTER, clock=clock).snapshot(snap())
    assert len(notes(fired, "resolved")) == 1 and Alert.objects.filter(state="resolved").count() == 2


def test_forty_partitions_offline_at_once_make_one_notification_listing_them(clock: Clock, hook: AlertChannel) -> None:
    r = rule("offline", hook)
    Evaluator(CLUSTER, clock=clock).snapshot(snap(offline=40))
    [n] = notes(r)
    assert len(n.payload["alerts"]) == 40 and n.alerts.count() == 40
    assert sorted(a["key"] for a in n.payload["alerts"]) == sorted(f"partition:orders:{p}" for p in range(40))
    assert "40 alerts firing" in n.title


def test_a_silenced_alert_is_kept_and_not_sent(clock: Clock, hook: AlertChannel) -> None:
    r = rule("broker_down", hook)
    now = datetime.fromtimestamp(T0, tz=UTC)
    s = Silence.objects.create(cluster=CLUSTER, matchers=[{"field": "key", "value": "broker:2"}], starts_at=now - timedelta(minutes=1),
                               ends_at=now + timedelta(minutes=10), comment="maintenance", created_by="ann")
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(down=(2, 3)))
    by_key = {a.key: a for a in Alert.objects.filter(rule=r)}
    assert by_key["broker:2"].state == "firing" and by_key["broker:2"].silenced_by_id == s.id
    assert by_key["broker:3"].silenced_by_id is None
    [n] = notes(r)
    assert [a["key"] for a in n.payload["alerts"]] == ["broker:3"]
    clock.t += 5
    ev.snapshot(snap(down=(3,)))
    assert states(r)["broker:2"] == "resolved" and notes(r, "resolved") == []  # (never sent: its end is not either)


def test_an_alert_whose_silence_ends_is_sent_then(clock: Clock, hook: AlertChannel) -> None:
    r = rule("broker_down", hook)
    now = datetime.fromtimestamp(T0, tz=UTC)
    Silence.objects.create(cluster="*", matchers=[], starts_at=now, ends_at=now + timedelta(seconds=60), comment="", created_by="ann")
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(down=(2,)))
    assert notes(r) == []
    clock.t += 61
    ev.snapshot(snap(down=(2,)))
    [n] = notes(r)
    assert n.kind == "firing" and Alert.objects.get(rule=r).silenced_by_id is None


def test_repeats_after_repeat_seconds_and_none_once_acknowledged(clock: Clock, hook: AlertChannel) -> None:
    r = rule("broker_down", hook, repeat_seconds=600)
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(down=(2,)))
    clock.t += 599
    ev.snapshot(snap(down=(2,)))
    assert [n.kind for n in notes(r)] == ["firing"]
    clock.t += 1
    ev.snapshot(snap(down=(2,)))
    ev.snapshot(snap(down=(2,)))
    assert [n.kind for n in notes(r)] == ["firing", "repeat"]
    Alert.objects.filter(rule=r).update(acknowledged_by="ann", acknowledged_at=datetime.fromtimestamp(clock.t, tz=UTC))
    clock.t += 601
    ev.snapshot(snap(down=(2,)))
    assert [n.kind for n in notes(r)] == ["firing", "repeat"]


def test_a_disabled_rule_makes_nothing_and_one_without_channels_sends_nothing(clock: Clock) -> None:
    off = rule("offline", name="off", enabled=False)
    quiet = rule("under_replicated", name="quiet")
    Evaluator(CLUSTER, clock=clock).snapshot(snap(offline=1, under=1))
    assert states(off) == {}
    assert states(quiet) == {"partition:orders:1": "firing"} and notes(quiet) == []


def test_a_rule_changed_or_disabled_is_read_again_at_the_next_cycle(clock: Clock, hook: AlertChannel) -> None:
    r = rule("under_replicated", hook, target="payments")
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap(under=1))
    assert states(r) == {}
    r.target = "ord*"
    r.save()
    ev.snapshot(snap(under=1))
    assert states(r) == {"partition:orders:0": "firing"}
    r.enabled = False
    r.save()
    ev.snapshot(snap(under=1))
    assert states(r) == {"partition:orders:0": "resolved"} and notes(r, "resolved") == []


def test_group_conditions_from_the_sampling_pass_and_a_pass_without_groups(clock: Clock, hook: AlertChannel) -> None:
    status = rule("group_status", hook, name="status", status="ERR")
    lag = rule("group_lag", hook, name="lag", threshold=100, target="pay*")
    ev = Evaluator(CLUSTER, "groups", clock=clock)
    stopped = GroupState("payments", "Stable", "consumer", "classic", "range", [], {"orders:0": 10}, status="ERR",
                         lag_keys=["orders:0"], lag_status=["STOP"], lag_seconds=[40.0])
    ev.groups({"payments": stopped}, {("orders", 0): 500}, clock.t)
    assert states(status) == {"group:payments": "firing"} and states(lag) == {"group:payments": "firing"}
    assert notes(lag)[0].payload["alerts"][0]["value"] == 490
    clock.t += 5
    ev.groups(None, {}, clock.t)  # (groups not read: nothing resolves)
    assert states(status) == {"group:payments": "firing"}
    fine = GroupState("payments", "Stable", "consumer", "classic", "range", [], {"orders:0": 500}, status="OK",
                      lag_keys=["orders:0"], lag_status=["OK"], lag_seconds=[0.0])
    ev.groups({"payments": fine}, {("orders", 0): 500}, clock.t)
    assert states(status) == {"group:payments": "resolved"} and states(lag) == {"group:payments": "resolved"}


def test_a_failed_reassignment_fires_job_failed(clock: Clock, hook: AlertChannel) -> None:
    from brokers_app.models import ReassignmentJob

    r = rule("job_failed", hook, target="reassignment")
    clock.t = time.time()
    ev = Evaluator(CLUSTER, clock=clock)
    ev.snapshot(snap())
    job = ReassignmentJob.objects.create(cluster=CLUSTER, kind="rebalance", state=ReassignmentJob.FAILED, error="Broker 3 is gone",
                                         finished_at=datetime.fromtimestamp(clock.t, tz=UTC))
    ev._jobs_at = -1e9  # (the failed jobs are read every JOBS_EVERY seconds)
    ev.snapshot(snap())
    assert states(r) == {f"job:reassignment:{job.id}": "firing"}
    assert notes(r)[0].payload["alerts"][0]["message"] == f"Reassignment job #{job.id} failed: Broker 3 is gone."


def test_the_shipped_rules_are_made_for_a_cluster_without_rules(clock: Clock) -> None:
    Evaluator(CLUSTER, clock=clock).snapshot(snap(offline=1))
    made = AlertRule.objects.filter(cluster=CLUSTER)
    assert sorted(r.name for r in made) == sorted(d["name"] for d in DEFAULTS)
    assert all(r.builtin and r.enabled and not r.channels.exists() for r in made)
    assert Alert.objects.filter(rule__condition="offline", state="firing").count() == 1 and Notification.objects.count() == 0


@pytest.mark.django_db(transaction=True)  # (the events thread reads the rules through a connection of its own)
def test_the_watcher_hands_each_cycles_snapshot_to_the_rules(clock: Clock, hook: AlertChannel) -> None:
    from console.watcher.publisher import Publisher

    r = rule("offline", hook)
    publisher = Publisher(CLUSTER, background=True)
    try:
        publisher.record_later(snap(offline=2), [])
        assert publisher.flush(10.0)
    finally:
        publisher.close()
    assert states(r) == {"partition:orders:0": "firing", "partition:orders:1": "firing"}


def test_preview_lists_what_a_rule_would_match_now(snapshot: Snapshot) -> None:
    assert preview("local", {"condition": "offline", "target": "ord*"}) == [
        {"key": "partition:orders:2", "value": 1.0, "message": "Partition 2 of topic 'orders' is offline (no leader; replicas [3])."}]
    assert [m["key"] for m in preview("local", {"condition": "broker_down"})] == ["broker:3"]
    assert preview("local", {"condition": "offline", "target": "payments"}) == []
    with pytest.raises(BadParameter, match="'condition' must be one of"):
        preview("local", {"condition": "disk_full"})


def test_ends_that_moved_during_a_pass_without_groups_are_looked_at_in_the_next(clock: Clock, hook: AlertChannel) -> None:
    lag = rule("group_lag", hook, threshold=100)
    ev = Evaluator(CLUSTER, "groups", clock=clock)
    g = GroupState("payments", "Stable", "consumer", "classic", "range", [], {"orders:0": 10}, status="OK")
    ev.groups({"payments": g}, {("orders", 0): 10}, clock.t, set())
    ev.groups(None, {("orders", 0): 600}, clock.t + 1, {"orders"})  # (the groups not read: nothing changes)
    assert states(lag) == {}
    ev.groups({"payments": g}, {("orders", 0): 600}, clock.t + 2, set())  # (this pass saw no move; the last one did)
    assert states(lag) == {"group:payments": "firing"}


def test_a_repeat_says_the_alerts_value_as_it_is_now(clock: Clock, hook: AlertChannel) -> None:
    r = rule("group_lag", hook, threshold=10, repeat_seconds=60)
    ev = Evaluator(CLUSTER, "groups", clock=clock)
    g = GroupState("payments", "Stable", "consumer", "classic", "range", [], {"orders:0": 0})
    ev.groups({"payments": g}, {("orders", 0): 100}, clock.t, None)
    clock.t += 60
    ev.groups({"payments": g}, {("orders", 0): 900}, clock.t, {"orders"})
    first, repeat = notes(r)
    assert (first.kind, first.payload["alerts"][0]["value"]) == ("firing", 100)
    assert (repeat.kind, repeat.payload["alerts"][0]["value"]) == ("repeat", 900)
    assert Alert.objects.get(rule=r).value == 900


def test_an_open_alerts_value_is_written_as_it_changes(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluator_module, "VALUES_EVERY", 0.0)
    r = rule("group_lag", threshold=10)
    ev = Evaluator(CLUSTER, "groups", clock=clock)
    g = GroupState("payments", "Stable", "consumer", "classic", "range", [], {"orders:0": 0})
    ev.groups({"payments": g}, {("orders", 0): 100}, clock.t, None)
    ev.groups({"payments": g}, {("orders", 0): 300}, clock.t + 1, {"orders"})
    a = Alert.objects.get(rule=r)
    assert (a.value, a.message) == (300, "Consumer group 'payments' is 300 records behind.")


def test_a_restarted_groups_evaluator_resolves_nothing_it_loaded_while_its_windows_fill(clock: Clock, hook: AlertChannel) -> None:
    r = rule("group_status", hook, status="ERR")
    stopped = GroupState("payments", "Stable", "consumer", "classic", "range", [], {}, status="ERR", lag_keys=["orders:0"],
                         lag_status=["STOP"])
    Evaluator(CLUSTER, "groups", clock=clock).groups({"payments": stopped}, {}, clock.t)
    assert states(r) == {"group:payments": "firing"}
    again = Evaluator(CLUSTER, "groups", clock=clock)  # (a restart: its lag windows empty, every partition OK at first)
    fresh = GroupState("payments", "Stable", "consumer", "classic", "range", [], {}, status="OK", lag_keys=["orders:0"], lag_status=["OK"])
    again.groups({"payments": fresh}, {}, clock.t + 60)
    assert states(r) == {"group:payments": "firing"}
    again.groups({"payments": fresh}, {}, clock.t + 121)
    assert states(r) == {"group:payments": "resolved"} and len(notes(r, "resolved")) == 1
