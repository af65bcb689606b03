"""Transactions at scale (issue 58): the transactions page and API at 10,000 transactional ids, and the
producers page of a topic whose partitions have many producers.

`.venv/bin/python -m bench.transactions [--ids 10000] [--producers 200] [--requests 100]` starts the
test cluster and its own Redis, then makes --ids transactional ids with real producers (confluent_kafka's
init_transactions: an InitProducerId at each id's coordinator, a pool of threads); --producers of them
commit a transaction writing to every partition of a 6-partition topic, beside as many idempotent
producers, and three leave one open (the first, opened before the rest, hangs by the time the watcher
looks). The watcher's look (services.list_transactions, stored in Redis) is timed, then through Django's
test client as an admin, in this process: the transactions page (first page, and filtered), its API, an
abort and the answer after it, the topic's producers page and API. Budget: pages <= 100 ms median.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.in_process import django_with_test_databases

TOPIC = "bench.txn.producers"
PARTITIONS = 6
HANGING_SECONDS = 30.0  # (the first open transaction is older than this when the watcher looks; the others are not)


def timed(client: Any, url: str, n: int) -> dict[str, float]:
    client.get(url)  # warm-up
    durations = []
    for _ in range(n):
        started = time.perf_counter()
        answer = client.get(url)
        durations.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (url, answer.status_code, answer.content[:300])
    durations.sort()
    return {"median_ms": round(statistics.median(durations), 2), "p95_ms": round(durations[int(0.95 * (n - 1))], 2)}


def make_ids(bootstrap: str, n: int, committing: int, workers: int = 16) -> float:
    """n transactional ids known to their coordinators; the first `committing` commit a transaction
    writing one record to each partition of TOPIC."""
    from confluent_kafka import Producer

    def one(i: int) -> None:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-txn-{i:05d}", "log_level": 3})
        p.init_transactions(60)
        if i < committing:
            p.begin_transaction()
            for part in range(PARTITIONS):
                p.produce(TOPIC, value=b"committed", partition=part)
            p.commit_transaction(60)

    started = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        for done, _ in enumerate(pool.map(one, range(n)), 1):
            if done % 1000 == 0:
                print(f"{done} transactional ids after {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return time.monotonic() - started


def idempotent(bootstrap: str, n: int) -> None:
    from confluent_kafka import Producer

    for _ in range(n):
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 3})
        for part in range(PARTITIONS):
            p.produce(TOPIC, value=b"idempotent", partition=part)
        assert p.flush(30) == 0


def open_transaction(bootstrap: str, tid: str, partition: int) -> Any:
    """A producer whose transaction stays open (kept alive by the caller) with one record in it."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 600_000, "log_level": 3})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(TOPIC, value=b"open", partition=partition)
    assert p.flush(30) == 0
    return p


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic
    from django.contrib.auth.models import User
    from django.test import Client, override_settings

    from tests.support import BOOTSTRAP
    from transactions_app import listing, watch

    result: dict[str, Any] = {"ids": args.ids, "committing": args.producers, "idempotent": args.producers}
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})  # (kept while its futures are waited for)
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]).values():
        f.result()
    hanging, opened = open_transaction(BOOTSTRAP, "bench-open-hanging", 0), time.monotonic()
    result["make_ids_s"] = round(make_ids(BOOTSTRAP, args.ids, args.producers), 1)
    idempotent(BOOTSTRAP, args.producers)
    time.sleep(max(0.0, HANGING_SECONDS + 1 - (time.monotonic() - opened)))  # (a small --ids makes them faster)
    young = [open_transaction(BOOTSTRAP, f"bench-open-{i}", i) for i in (1, 2)]

    with override_settings(TRANSACTION_HANGING_SECONDS=HANGING_SECONDS):
        looks = []
        for _ in range(3):
            started = time.perf_counter()
            watch.look("local", {})
            looks.append((time.perf_counter() - started) * 1000)
        result["look_ms"] = {"median": round(statistics.median(looks), 1), "max": round(max(looks), 1)}
        stored = listing.stored("local")
        assert stored is not None and stored.total >= args.ids + 3, stored
        result["hanging"] = stored.hanging

        web = Client(HTTP_HOST="localhost")
        web.force_login(User.objects.create_superuser("bench-admin", "b@example.com", "bench-pw-123"))
        page, api = "/clusters/local/transactions/", "/api/v1/clusters/local/transactions/"
        result["page"] = timed(web, page, args.requests)
        result["page_filtered"] = timed(web, page + "?q=bench-txn-0999", args.requests)
        result["api"] = timed(web, api, args.requests)
        result["api_bytes"] = len(web.get(api).content)
        body = web.get(api).json()
        assert body["source"] == "watcher" and len(body["transactions"]) >= args.ids + 3

        started = time.perf_counter()
        r = web.post(api + "bench-open-hanging/abort/", {"confirm": "bench-open-hanging"}, content_type="application/json")
        result["abort_ms"] = round((time.perf_counter() - started) * 1000, 1)
        assert r.status_code == 200, r.content
        after = {t["transactional_id"]: t for t in web.get(api).json()["transactions"][:10]}
        result["hanging_after_abort"] = sum(1 for t in after.values() if t["hanging"])

        producers_page = f"/clusters/local/topics/{TOPIC}/producers/"
        producers_api = f"/api/v1/clusters/local/topics/{TOPIC}/producers/"
        result["producers_page"] = timed(web, producers_page, args.requests)
        result["producers_api"] = timed(web, producers_api, args.requests)
        result["producers"] = web.get(producers_api).json()["producers"]
    for p in young:
        p.abort_transaction(30)
    del hanging
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, default=10_000)
    parser.add_argument("--producers", type=int, default=200)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    with django_with_test_databases("bench-transactions-"):
        from tests.support import running_cluster, running_redis  # (they read TEST_VAR_DIR, set just now)

        with running_redis(), running_cluster():
            print(json.dumps(measure(args)), flush=True)


if __name__ == "__main__":
    main()
