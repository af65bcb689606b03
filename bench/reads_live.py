"""Reads while the cluster moves (issue 54): single-object answers and sorted lists, timed in process
while the real watcher publishes a moving simulated cluster.

`.venv/bin/python -m bench.reads_live [--topics 2000] [--partitions-per-topic 10] [--groups 2000]
[--change-rate 0.05] [--offsets-interval 1] [--seconds 60]` runs `bench.simulate` (the real watcher
and its sampling process on bench/simulate.py's model, as cluster "sim", with its own Redis) in a
child process: partitions change leader, ISR and end offsets every 0.1 s, the groups commit, and
the watcher reads every end offset and committed offset each `--offsets-interval` seconds, so a
new snapshot version comes about every second. Once the child's first passes are in and the model
is changing, this process (a web process: the same Redis, Django's test client, a logged-in admin,
middleware and templates, no network) asks in turn, `--gap` seconds apart, each of:

- a group's page and its API answer (a group picked at random each time),
- a topic's consumers (the topic's API answer, with its groups' lag),
- a topic search (the topics API with a random name fragment),
- the groups sorted by lag (the API, descending total lag),
- the topics list page and its API,

and prints one JSON line with each one's median and p99 in milliseconds, wall and this thread's CPU
(the machine's other work moves the first, hardly the second), and the median of the answers that
were the first of their kind after a new version (what the version's change costs them).
`--profile NAME` (or `all`) also prints where that answer spends its time over the run.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.web_reads import quantile
from tests.support import wait_for

CLUSTER = "sim"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=2_000)
    parser.add_argument("--partitions-per-topic", type=int, default=10)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--brokers", type=int, default=6)
    parser.add_argument("--change-rate", type=float, default=0.05, help="share of the partitions changing per second")
    parser.add_argument("--offsets-interval", type=float, default=1.0, help="the watcher's WATCHER_OFFSETS_INTERVAL")
    parser.add_argument("--seconds", type=float, default=60, help="seconds of timed requests")
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between two requests")
    parser.add_argument("--profile", default="", help="profile this answer (one of the names printed, or all) over the run")
    args = parser.parse_args()
    budget = args.seconds + 1200  # (the child's warm-up: its model, first cycle and first passes)
    env = {**os.environ, "WATCHER_OFFSETS_INTERVAL": str(args.offsets_interval)}
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.simulate", "--partitions", str(args.topics * args.partitions_per_topic),
         "--partitions-per-topic", str(args.partitions_per_topic), "--groups", str(args.groups),
         "--brokers", str(args.brokers), "--change-rate", str(args.change_rate), "--seconds", str(budget)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        result = measure(args, child)
    finally:
        child.send_signal(signal.SIGINT)  # (its Redis and model server stopped on the way out)
        try:
            child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
    print(json.dumps(result), flush=True)


def measure(args: argparse.Namespace, child: subprocess.Popen[str]) -> dict[str, Any]:
    from bench.run import setup_django

    setup_django()
    from django.conf import settings

    from console.gateway.config import ClusterConfig
    from console.snapshots import loader, store

    settings.KAFKA_CLUSTERS = (*settings.KAFKA_CLUSTERS, ClusterConfig(name=CLUSTER, bootstrap_servers="127.0.0.1:9"))

    def moving() -> bool:
        if child.poll() is not None:
            raise SystemExit("bench.simulate ended before the run")
        try:
            raw = store.client().get(store.stamp_key(CLUSTER))
        except store.StoreUnavailable:
            return False
        except Exception:  # noqa: BLE001 - (its Redis not up yet)
            return False
        if raw is None:
            return False
        stamp = json.loads(raw)
        return bool(stamp.get("groups_at") and stamp.get("offsets_at"))

    wait_for(moving, 1200, what="the simulated cluster's first snapshot with groups and offsets")
    first = loader.load(CLUSTER)
    assert first is not None
    # The child changes the model once its first two passes are in: wait for versions after that.
    wait_for(lambda: (s := loader.load(CLUSTER)) is not None and s.version >= first.version + 3, 600,
             what="the simulated cluster to move")

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    call_command("ensureuser", "bench-admin", "--role", "admin", "--password", "bench-password", verbosity=0)
    client = Client(HTTP_HOST="localhost")
    client.force_login(User.objects.get(username="bench-admin"))
    snap = loader.load(CLUSTER)
    assert snap is not None
    groups, topics = list(snap.groups), sorted(snap.topics)
    rng = random.Random(7)
    api = f"/api/v1/clusters/{CLUSTER}"
    asks: dict[str, Callable[[], str]] = {
        "group_page": lambda: f"/clusters/{CLUSTER}/groups/{rng.choice(groups)}/",
        "group_api": lambda: f"{api}/consumer-groups/{rng.choice(groups)}/",
        "topic_consumers_api": lambda: f"{api}/topics/{rng.choice(topics)}/",
        "topic_search_api": lambda: f"{api}/topics/?q=topic-{rng.randrange(1000):03d}",
        "groups_by_lag_api": lambda: f"{api}/consumer-groups/?ordering=-total_lag",
        "topics_page": lambda: f"/clusters/{CLUSTER}/topics/",
        "topics_api": lambda: f"{api}/topics/",
    }
    if args.profile and args.profile not in asks and args.profile != "all":
        raise SystemExit(f"--profile: all, or one of {', '.join(asks)}")
    for make in asks.values():  # (each answer once: what a web process does once after it starts)
        response = client.get(make())
        assert response.status_code == 200, (make(), response.status_code)
    times: dict[str, list[float]] = {name: [] for name in asks}
    cpu: dict[str, list[float]] = {name: [] for name in asks}  # (this thread's CPU: what the machine's other work does not move)
    after_new: dict[str, list[float]] = {name: [] for name in asks}
    version_seen: dict[str, int] = {}
    versions: set[int] = set()
    profile = cProfile.Profile() if args.profile else None
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for name, make in asks.items():
            url = make()
            timed = profile is not None and args.profile in (name, "all")
            if timed:
                profile.enable()  # type: ignore[union-attr]
            started, cpu_started = time.perf_counter(), time.thread_time()
            response = client.get(url)
            took = time.perf_counter() - started
            cpu[name].append(time.thread_time() - cpu_started)
            if timed:
                profile.disable()  # type: ignore[union-attr]
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code} {response.content[:300]!r}")
            held = loader.cached(CLUSTER)
            version = held.version if held is not None else -1
            versions.add(version)
            times[name].append(took)
            if version_seen.get(name) != version:
                after_new[name].append(took)
                version_seen[name] = version
            time.sleep(args.gap)
    out: dict[str, Any] = {"topics": len(topics), "partitions": sum(len(t.partitions) for t in snap.topics.values()),
                           "groups": len(groups), "change_rate": args.change_rate, "offsets_interval": args.offsets_interval,
                           "seconds": args.seconds, "versions_seen": len(versions)}
    for name in asks:
        ms = [t * 1000 for t in times[name]]
        first_ms = [t * 1000 for t in after_new[name]]
        cpu_ms = [t * 1000 for t in cpu[name]]
        out[name] = {"n": len(ms), "median_ms": round(statistics.median(ms), 2), "p99_ms": quantile(ms, 0.99),
                     "cpu_median_ms": round(statistics.median(cpu_ms), 2), "cpu_p99_ms": quantile(cpu_ms, 0.99),
                     "after_new_version_median_ms": round(statistics.median(first_ms), 2) if first_ms else None}
    if profile is not None:
        print(f"--- {args.profile}", file=sys.stderr)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
    return out


if __name__ == "__main__":
    main()
