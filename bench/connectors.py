"""The connectors page and API at 500 connectors (issue 57), replaying a recorded Connect answer.

`.venv/bin/python -m bench.connectors [--connectors 500] [--requests 100]`

One worker on this 2-core machine cannot hold 500 real connectors (each a task thread with its own
producer or consumer, in a 256 MB heap beside three brokers), so the bench replays a real worker's
answer instead: bench/data/connect_expanded.json is `GET /connectors?expand=status&expand=info` as
the test worker (tests/connect_worker.py) gave it, with sources, sinks, a paused, a stopped and two
failed tasks; its entries are repeated under new names up to --connectors and served by
tests/connect_double.py. The watcher's read (connect_app/state.py: one call, parsed and stored in
Redis) is timed once per round, then the page and the API are timed in this process through Django's
test client (middleware, templates, the whole view; no network), as an operator. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any

from tests.support import running_redis

RECORDED = Path(__file__).resolve().parent / "data" / "connect_expanded.json"


def answer_of(size: int) -> bytes:
    """The recorded answer's connectors repeated under new names until there are `size` of them."""
    recorded = json.loads(RECORDED.read_text())
    names = sorted(recorded)
    out: dict[str, Any] = {}
    for i in range(size):
        original = names[i % len(names)]
        name = f"{original}-{i:04d}"
        entry = copy.deepcopy(recorded[original])
        entry["status"]["name"] = entry["info"]["name"] = entry["info"]["config"]["name"] = name
        for t in entry["info"].get("tasks") or []:
            t["connector"] = name
        out[name] = entry
    return json.dumps(out).encode()


def timed(client: Any, url: str, n: int) -> dict[str, float]:
    client.get(url)  # warm-up
    durations = []
    for _ in range(n):
        started = time.perf_counter()
        answer = client.get(url)
        durations.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (url, answer.status_code)
    durations.sort()
    return {"median_ms": round(statistics.median(durations), 2), "p95_ms": round(durations[int(0.95 * (n - 1))], 2)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bench.in_process import django_with_test_databases

    with django_with_test_databases("bench-connectors-"):
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.test import Client, override_settings

        from connect_app import state
        from connect_app.client import ConnectClient
        from console.connect_config import ConnectConfig
        from tests.connect_double import ConnectDouble, running_double

        call_command("ensureuser", "bench-operator", "--role", "operator", "--password", "bench-password", verbosity=0)
        double = ConnectDouble(expanded_body=answer_of(args.connectors))
        with running_double(double) as d:
            config = ConnectConfig("local", d.url)
            with override_settings(KAFKA_CONNECT={"local": (config,)}):
                client = ConnectClient(config)
                reads = []
                for _ in range(10):
                    started = time.perf_counter()
                    read = state.refresh("local", config, client, broadcast=False)
                    reads.append((time.perf_counter() - started) * 1000)
                assert read.reachable and len(read.connectors) == args.connectors, read.error
                web = Client(HTTP_HOST="localhost")
                web.force_login(User.objects.get(username="bench-operator"))
                page = timed(web, "/clusters/local/connect/", args.requests)
                api = timed(web, "/api/v1/clusters/local/connectors/", args.requests)
                shown = web.get("/clusters/local/connect/").content.decode().count("<tr data-connector=")
                assert shown == args.connectors, shown
    return {"connectors": args.connectors, "page": page, "api": api,
            "watcher_read_median_ms": round(statistics.median(reads), 2), "answer_bytes": len(double.expanded_body or b"")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=500)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    with running_redis():
        result = measure(args)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
