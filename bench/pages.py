"""Page speed at scale without Kafka (issue 11): list pages against their API on a simulated cluster.

`.venv/bin/python -m bench.pages [--topics 10000] [--partitions-per-topic 3] [--groups 2000] [--requests 40]`
builds bench/simulate.py's model, lets the real watcher publish its snapshot (as cluster "local",
the test settings' cluster) to Redis, then times, in this process through Django's test client
(middleware, templates, the whole view; no network), the topics and groups list pages and the same
first pages through the API. Prints one JSON line with the medians; `--profile` prints where a
topics page spends its time; `--append` records in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

from tests.support import ROOT, running_redis


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions-per-topic", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--append", action="store_true")
    parser.add_argument("--scoped", action="store_true",
                        help="as a user bound to the topics and groups starting 'sim.topic-001' / 'sim.group-001' (1,000 each "
                             "at the defaults) instead of an admin: the lists are cut to the user's names")
    args = parser.parse_args()
    with running_redis():
        result = measure(args)
    print(json.dumps(result), flush=True)
    if args.append:
        append(args, result)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bench.run import setup_django

    setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    settings.ANALYTICS_SAMPLES = False
    from bench.simulate import Model, SimGateway
    from console.watcher.loop import ClusterWatcher

    model = Model(args.topics * args.partitions_per_topic, args.groups, 3, args.partitions_per_topic)
    watcher = ClusterWatcher("local", "bench", gw=SimGateway(model, 0.0))  # type: ignore[arg-type]
    watcher.cycle()
    watcher.sample_offsets()
    watcher.cycle()
    user = "bench-scoped" if args.scoped else "bench-admin"
    call_command("ensureuser", user, "--role", "none" if args.scoped else "admin", "--password", "bench-password", verbosity=0)
    if args.scoped:
        from console.models import RoleBinding

        RoleBinding.objects.filter(subject=user).delete()
        RoleBinding.objects.create(subject_kind="user", subject=user, role="viewer", cluster="local", topic_kind="prefix",
                                   topic_pattern="sim.topic-001", group_kind="prefix", group_pattern="sim.group-001")
    from django.contrib.auth.models import User

    client = Client(HTTP_HOST="localhost")
    client.force_login(User.objects.get(username=user))  # (the login form's throttling wants a request)
    urls = {
        "topics_page": "/clusters/local/topics/",
        "topics_api": "/api/v1/clusters/local/topics/",
        "groups_page": "/clusters/local/groups/",
        "groups_api": "/api/v1/clusters/local/consumer-groups/",
    }
    out: dict[str, Any] = {"topics": args.topics, "partitions": args.topics * args.partitions_per_topic, "groups": args.groups,
                           "scoped": args.scoped}
    for name, url in urls.items():
        response = client.get(url)  # warm-up: the first request after a new snapshot parses it
        assert response.status_code == 200, (url, response.status_code)
        times = []
        for _ in range(args.requests):
            started = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - started)
        out[f"{name}_median_ms"] = round(statistics.median(times) * 1000, 1)
        out[f"{name}_bytes"] = len(response.content)
    out["topics_page_vs_api"] = round(out["topics_page_median_ms"] / out["topics_api_median_ms"], 2)
    out["groups_page_vs_api"] = round(out["groups_page_median_ms"] / out["groups_api_median_ms"], 2)
    if args.profile:
        for name in ("topics_page", "groups_page"):
            profile = cProfile.Profile()
            profile.runcall(client.get, urls[name])
            print(f"--- {name}", file=sys.stderr)
            pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    return out


def append(args: argparse.Namespace, r: dict[str, Any]) -> None:
    command = (f".venv/bin/python -m bench.pages --topics {args.topics} --partitions-per-topic {args.partitions_per_topic} "
               f"--groups {args.groups} --requests {args.requests}{' --scoped' if args.scoped else ''}")
    text = "\n".join([
        f"\n## List pages against their API on a simulated cluster (issue 11), {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n",
        f"Command: `{command}` (no Kafka: bench/simulate.py's model published by the real watcher; Django's test client "
        "in process, so the whole view and middleware, no network).\n",
        "| topics | partitions | groups | topics page | topics API | page / API | groups page | groups API | page / API | budget |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {r['topics']:,} | {r['partitions']:,} | {r['groups']:,} | {r['topics_page_median_ms']} ms | {r['topics_api_median_ms']} ms | "
        f"{r['topics_page_vs_api']} | {r['groups_page_median_ms']} ms | {r['groups_api_median_ms']} ms | {r['groups_page_vs_api']} | "
        "page <= 2x API and <= 60 ms |",
        "",
    ])
    with open(ROOT / "docs" / "benchmarks.md", "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
