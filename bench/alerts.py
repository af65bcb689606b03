"""What alert rules add to the watcher (issue 56): 1,000 rules over 10,000 topics and 2,000 groups.

`.venv/bin/python -m bench.alerts [--rules 1000] [--topics 10000] [--groups 2000] [--cycles 300]`
builds a synthetic cluster (3 partitions a topic, replication factor 3, one group per topic read by
`--groups` of them) and the rules in a throw-away SQLite database with the test Redis: half on the
metadata (partitions offline, under-replicated, under min ISR, produce rate zero, broker down, no
controller, controller moved, quorum lag), half on the groups (status, total and partition lag, time
lag); by name mostly, some by glob, a few on every subject; each with a channel (the delivery
tasks are left out: bench.alert_delivery measures them). Then cycle after cycle a typical small
change: 1% of the topics replaced (leaders moving; a few ISRs shrinking and growing back, so alerts
fire and resolve), a tenth of the groups committing and the end offsets of a tenth of the topics
moving. It times the metadata evaluator per watcher cycle and the groups evaluator per sampling
pass, as the watcher calls them, and prints one JSON line: their medians (and p95, max) in ms and
their sum, the figure held to the budget (<= 20 ms); the same in CPU time of the calling thread
(what the evaluation costs whatever else the machine runs), and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections import Counter
from typing import Any

from bench.in_process import django_with_test_databases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--cycles", type=int, default=300)
    args = parser.parse_args()
    with django_with_test_databases("alerts-bench-"):
        from tests.support import running_redis  # (it reads TEST_VAR_DIR, set just now)

        with running_redis():
            print(json.dumps(_measure(args.rules, args.topics, args.groups, args.cycles)))


def _topic(name: str, shrunk: bool, leader: int) -> Any:
    from console.snapshots import PartitionState, TopicState

    parts = []
    for p in range(3):
        replicas = [(leader + p + i) % 6 + 1 for i in range(3)]
        isr = replicas[:1] if shrunk and p == 0 else replicas
        parts.append(PartitionState(p, replicas[0], replicas, isr, [], 0, 1000))
    return TopicState(name, False, parts, min_isr=2, produce_rate=0.0 if name.endswith("7") else 12.5)


def _rules(n: int, topics: int, groups: int) -> None:
    from alerts_app import generation
    from alerts_app.models import AlertChannel, AlertRule

    hook = AlertChannel.objects.create(name="bench", kind="webhook", url="http://127.0.0.1:9/")
    metadata = ("under_replicated", "under_min_isr", "offline", "produce_rate_zero")
    group = ("group_status", "group_lag", "partition_lag", "time_lag")
    made = []
    for i in range(n):
        on_groups = i % 2 == 1
        condition = group[i // 2 % 4] if on_groups else metadata[i // 2 % 4]
        if not on_groups and i % 50 == 0:
            condition = ("broker_down", "no_controller", "controller_moved", "quorum_lag")[i // 50 % 4]
        names = f"g{i * 7 % groups}" if on_groups else f"t{i * 13 % topics}"
        target = "*" if i % 100 < 3 else f"{names[:-1]}*" if i % 10 == 9 else names
        made.append(AlertRule(cluster="bench", name=f"rule {i}", condition=condition, target=target, for_seconds=(0, 30)[i % 2],
                              threshold=1000 if condition in ("group_lag", "partition_lag") else 60 if condition == "time_lag" else None,
                              status="ERR" if condition == "group_status" else "", severity="warning"))
    AlertRule.objects.bulk_create(made)
    for r in AlertRule.objects.filter(cluster="bench"):
        r.channels.add(hook)
    generation.bump_generation()


def _measure(n_rules: int, n_topics: int, n_groups: int, cycles: int) -> dict[str, Any]:
    from alerts_app import notify
    from alerts_app.evaluator import Evaluator
    from alerts_app.models import Alert, Notification
    from console.snapshots import BrokerState, GroupState, QuorumMember, QuorumState, Snapshot

    notify.enqueue = lambda notification_id: None  # type: ignore[assignment]  # (the delivery is bench.alert_delivery's)
    rng = random.Random(56)
    _rules(n_rules, n_topics, n_groups)
    topics = {f"t{i}": _topic(f"t{i}", False, i) for i in range(n_topics)}
    shrunk: set[str] = set()
    ends = {(f"t{i}", p): 1000 for i in range(n_topics) for p in range(3)}

    def group(i: int, committed: int) -> GroupState:
        keys = [f"t{i}:{p}" for p in range(3)]
        return GroupState(f"g{i}", "Stable", "consumer", "classic", "range", [], dict.fromkeys(keys, committed),
                          status="ERR" if i % 97 == 0 else "OK", time_lag=5.0, lag_keys=keys,
                          lag_status=["STOP" if i % 97 == 0 else "OK"] * 3, lag_seconds=[5.0] * 3)

    groups = {f"g{i}": group(i, 990) for i in range(n_groups)}
    metadata, pass_ = Evaluator("bench", "metadata"), Evaluator("bench", "groups")
    brokers = {i: BrokerState(i, "127.0.0.1", 9090 + i, None, True) for i in range(1, 7)}
    quorum = QuorumState(1, 5, 100, [QuorumMember(i, 100, 0, 0, 0) for i in (1, 2, 3)], [])
    meta_ms, groups_ms = [], []
    parts: dict[str, list[float]] = {"metadata_cpu": [], "groups_cpu": [], "metadata_found": [], "metadata_written": [], "groups_found": [], "groups_written": []}
    now = time.time()
    for cycle in range(cycles + 20):
        now += 1.0
        for name in rng.sample(sorted(topics), n_topics // 100):
            flip = rng.random() < 0.001
            if flip:
                shrunk.symmetric_difference_update({name})
            topics[name] = _topic(name, name in shrunk, rng.randrange(6))
        snap = Snapshot("bench", reachable=True, checked_at=now, controller_id=1, brokers=brokers, quorum=quorum, topics=dict(topics))
        started, cpu = time.perf_counter(), time.thread_time()
        metadata.clock = lambda: now  # noqa: B023 - (each cycle's own time)
        metadata.snapshot(snap)
        took, took_cpu = (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000
        for i in rng.sample(range(n_groups), n_groups // 10):
            groups[f"g{i}"] = group(i, 990 + cycle)
        moved = set()
        for i in rng.sample(range(n_topics), n_topics // 10):
            moved.add(f"t{i}")
            for p in range(3):
                ends[(f"t{i}", p)] += 10
        started, cpu = time.perf_counter(), time.thread_time()
        pass_.clock = metadata.clock
        pass_.groups(dict(groups), ends, now, moved)
        took_groups, took_groups_cpu = (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000
        if cycle >= 20:  # (the first cycles find every subject and write the first alerts)
            meta_ms.append(took)
            groups_ms.append(took_groups)
            parts["metadata_cpu"].append(took_cpu)
            parts["groups_cpu"].append(took_groups_cpu)
            parts["metadata_found"].append(metadata.found_seconds * 1000)
            parts["metadata_written"].append(metadata.write_seconds * 1000)
            parts["groups_found"].append(pass_.found_seconds * 1000)
            parts["groups_written"].append(pass_.write_seconds * 1000)
    meta_ms.sort()
    groups_ms.sort()
    return {
        "rules": n_rules, "topics": n_topics, "partitions": n_topics * 3, "groups": n_groups, "cycles": cycles,
        "metadata_p50_ms": round(statistics.median(meta_ms), 2), "metadata_p95_ms": round(meta_ms[int(len(meta_ms) * 0.95)], 2),
        "metadata_max_ms": round(meta_ms[-1], 2),
        "groups_p50_ms": round(statistics.median(groups_ms), 2), "groups_p95_ms": round(groups_ms[int(len(groups_ms) * 0.95)], 2),
        "groups_max_ms": round(groups_ms[-1], 2),
        "sum_p50_ms": round(statistics.median(meta_ms) + statistics.median(groups_ms), 2),
        **{f"{name}_p50_ms": round(statistics.median(values), 2) for name, values in parts.items()},
        "sum_cpu_p50_ms": round(statistics.median(parts["metadata_cpu"]) + statistics.median(parts["groups_cpu"]), 2),
        "load_average": round(os.getloadavg()[0], 1), "cpus": os.cpu_count(),
        "alerts": Alert.objects.count(), "firing": Alert.objects.filter(state="firing").count(),
        "notifications": Notification.objects.count(),
        "notifications_by_condition": dict(Counter(Notification.objects.values_list("rule__condition", flat=True))),
    }


if __name__ == "__main__":
    main()
