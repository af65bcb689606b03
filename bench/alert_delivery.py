"""Alert to delivered webhook (issue 56): seconds from enqueue() to the receiver holding the POST.

`TEST_REDIS_PORT=6985 .venv/bin/python -m bench.alert_delivery [--count 200] [--burst 100]`
starts a Redis of its own, a Celery worker as the Procfile runs it (threads, 4) on a throw-away SQLite
database, and a local HTTP receiver; then queues `--count` notifications one at a time (each a
webhook delivery, committed, then enqueue()), and then `--burst` at once (an incident that fires many
rules together). Reports p50 / p99 / max per phase. Budget: p99 <= 2 s. One JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between two notifications of the steady phase")
    args = parser.parse_args()
    os.environ.setdefault("TEST_VAR_DIR", tempfile.mkdtemp(prefix="alert-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django

    django.setup()
    from django.core.management import call_command

    from tests.alert_receivers import http_receiver
    from tests.support import TEST_VAR, running_redis

    call_command("migrate", verbosity=0)
    with running_redis(), http_receiver() as receiver:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        log = open(Path(TEST_VAR) / "worker.log", "wb")  # noqa: SIM115 - open for the worker's whole life
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "threads",
                                   "--concurrency", "4", "--loglevel", "WARNING"], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            print(json.dumps(_measure(receiver, args.count, args.burst, args.gap)))
        finally:
            worker.terminate()
            worker.wait(30)
            log.close()


def _notify(url: str, name: str) -> tuple[str, float]:
    import uuid

    from django.utils import timezone

    from alerts_app import delivery
    from alerts_app.models import AlertChannel, Delivery, Notification

    channel, _ = AlertChannel.objects.get_or_create(name=name, defaults={"kind": "webhook", "url": url, "secret": "bench"})
    nid = uuid.uuid4()
    now = timezone.now().isoformat()
    payload = {"id": str(nid), "cluster": "local", "kind": "firing", "severity": "critical", "title": "Partitions offline",
               "rule": {"name": "offline", "condition": "offline"},
               "alerts": [{"key": f"partition:orders:{i}", "state": "firing", "message": f"orders-{i} has no leader",
                           "since": now, "fired_at": now} for i in range(40)], "created_at": now}
    n = Notification.objects.create(id=nid, cluster="local", kind="firing", severity="critical", title="Partitions offline",
                                    payload=payload)
    Delivery.objects.create(notification=n, channel=channel)
    started = time.monotonic()
    delivery.enqueue(str(nid))  # (outside a transaction: queued at once)
    return str(nid), started


def _measure(receiver, count: int, burst: int, gap: float) -> dict[str, object]:  # type: ignore[no-untyped-def]
    # The worker's first task pays its imports and connections: one warm-up, not counted.
    _notify(receiver.url, "bench-hook")
    receiver.wait(1, timeout=60)
    out: dict[str, object] = {}
    for phase, n, pause in (("steady", count, gap), ("burst", burst, 0.0)):
        seen = len(receiver.requests)
        starts: dict[str, float] = {}
        for _ in range(n):
            nid, started = _notify(receiver.url, "bench-hook")
            starts[nid] = started
            if pause:
                time.sleep(pause)
        got = receiver.wait(seen + n, timeout=120)[seen:]
        latencies = sorted(r.at - starts[r.headers["x-console-delivery"]] for r in got)
        out[phase] = {"notifications": n, "p50_s": round(statistics.median(latencies), 4),
                      "p99_s": round(latencies[max(0, int(len(latencies) * 0.99) - 1)], 4), "max_s": round(latencies[-1], 4)}
    out["budget_p99_s"] = 2.0
    out["load_average"] = round(os.getloadavg()[0], 2)
    return out


if __name__ == "__main__":
    main()
