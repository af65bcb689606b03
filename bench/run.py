"""Benchmarks of the foundation (issue 2): `make bench` or `.venv/bin/python -m bench.run`.

Starts the same stack as the test suite (own Redis, 3-node cluster, web, watcher, Celery) plus the
demo traffic, then measures:
  1. SIGKILL of a broker -> the overview page in Chromium shows it down (no reload);
  2. server time of the overview and topic-layout pages, and Kafka calls made on the request path
     (from the Server-Timing header the console adds);
  3. the watcher's Kafka requests per cycle, CPU and memory, idle and with 50 websocket clients.
Prints a Markdown section and appends it to docs/benchmarks.md.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from functools import partial
from typing import Any

import requests

from tests.support import (
    CHROMIUM_ARGS,
    PASSWORD,
    ROOT,
    TEST_VAR,
    running_cluster,
    running_redis,
    running_stack,
    stack_env,
    wait_for,
)

SESSION_TIMEOUT_S = 6.0


def login_session(base_url: str) -> requests.Session:
    s = requests.Session()
    page = s.get(base_url + "/login/", timeout=10).text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token
    r = s.post(base_url + "/login/", data={"csrfmiddlewaretoken": token.group(1), "username": "viewer", "password": PASSWORD},
               headers={"Referer": base_url + "/login/"}, timeout=10, allow_redirects=False)
    assert r.status_code == 302, r.status_code
    return s


def setup_django() -> None:
    """Configure this process like the test stack (its Redis, cluster and database) and start Django."""
    names = {"REDIS_URL", "DJANGO_SETTINGS_MODULE", "CONSOLE_VAR_DIR", "DEVCLUSTER_BASE_PORT", "DEVCLUSTER_DIR", "DATABASE_URL"}
    os.environ.update({k: v for k, v in stack_env().items() if k in names})
    import django

    django.setup()


def broker_up(stack: Any, broker: int) -> bool:
    return any(b["id"] == broker and b["up"] for b in stack.get("/api/v1/clusters/local/brokers/").json()["brokers"])


def server_time(session: requests.Session, url: str, n: int) -> dict[str, Any]:
    session.get(url, timeout=30)  # warm-up: the first request after a change parses the new snapshot
    durations, calls = [], set()
    for _ in range(n):
        r = session.get(url, timeout=10)
        assert r.status_code == 200, (url, r.status_code)
        timing = r.headers["Server-Timing"]
        durations.append(float(re.search(r"app;dur=([\d.]+)", timing).group(1)))  # type: ignore[union-attr]
        calls.add(int(re.search(r'kafka;desc="(\d+) calls"', timing).group(1)))  # type: ignore[union-attr]
    durations.sort()
    return {"median_ms": statistics.median(durations), "p95_ms": durations[int(0.95 * (n - 1))], "max_ms": durations[-1],
            "kafka_calls": sorted(calls), "n": n}


def watcher_window(stack: Any, seconds: float) -> dict[str, Any]:
    from console.snapshots import store

    first = wait_for(lambda: store.load_stats("local"), 10, what="watcher stats")
    time.sleep(seconds)
    last = store.load_stats("local")
    assert last is not None
    cycles = int(last["cycles"]) - int(first["cycles"])  # type: ignore[call-overload]
    cpu = float(last["cpu_seconds_total"]) - float(first["cpu_seconds_total"])  # type: ignore[arg-type]
    offsets = int(last["offset_requests_total"]) - int(first["offset_requests_total"])  # type: ignore[call-overload]
    return {
        "cycles": cycles,
        "cycles_per_s": round(cycles / seconds, 2),
        "requests_last_cycle": last["requests_last_cycle"],
        "offset_calls_per_s": round(offsets / seconds, 2),
        "cpu_percent": round(100 * cpu / seconds, 1),
        "max_rss_mb": last["max_rss_mb"],
        "cycle_seconds": last["cycle_seconds"],
    }


def main() -> None:
    setup_django()
    from playwright.sync_api import sync_playwright

    results: dict[str, Any] = {}
    with running_redis(), running_cluster() as cluster, running_stack(cluster) as stack:
        with open(TEST_VAR / "logs" / "demo.log", "wb") as log:
            demo = subprocess.Popen([sys.executable, "manage.py", "demo"], cwd=ROOT, env=stack_env(), stdout=log,
                                    stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: stack.get("/api/v1/clusters/local/").json()["counts"]["topics"] >= 5, 60, what="demo topics")
            time.sleep(5)
            counts = stack.get("/api/v1/clusters/local/").json()["counts"]
            results["scale"] = counts
            session = login_session(stack.base_url)
            results["overview"] = server_time(session, stack.base_url + "/clusters/local/", 100)
            results["layout"] = server_time(session, stack.base_url + "/clusters/local/layout/", 100)
            results["layout_filtered"] = server_time(session, stack.base_url + "/clusters/local/layout/?q=orders", 100)
            results["api_partitions"] = server_time(session, stack.base_url + "/api/v1/clusters/local/topics/demo.orders/partitions/", 100)

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=CHROMIUM_ARGS)
                context = browser.new_context()
                page = context.new_page()
                page.goto(stack.base_url + "/login/")
                page.fill("input[name=username]", "viewer")
                page.fill("input[name=password]", PASSWORD)
                page.click("button[type=submit]")
                page.wait_for_selector("#live-state:text('live')")

                results["watcher_1_client"] = watcher_window(stack, 20)
                opener = context.new_page()
                opener.goto(stack.base_url + "/clusters/local/")
                opener.evaluate("""() => { window.__msgs = 0; window.__open = 0; window.__socks = [];
                  for (let i = 0; i < 50; i++) { const ws = new WebSocket('ws://' + location.host + '/ws/clusters/local/live/?view=overview');
                    ws.onopen = () => window.__open++; ws.onmessage = () => window.__msgs++; window.__socks.push(ws); } }""")
                opener.wait_for_function("window.__open === 50", timeout=20_000)
                results["watcher_51_clients"] = watcher_window(stack, 20)
                results["messages_to_50_sockets_in_20s"] = opener.evaluate("window.__msgs")
                opener.close()

                latencies = []
                for victim in (3, 2, 3):
                    page.wait_for_selector(f'tr[data-broker="{victim}"] [data-state="up"]', timeout=60_000)
                    pid = int((TEST_VAR / "cluster" / f"node{victim}" / "pid").read_text())
                    t0 = time.monotonic()
                    os.kill(pid, 9)
                    page.wait_for_selector(f'tr[data-broker="{victim}"] [data-state="down"]', timeout=60_000)
                    latencies.append(round(time.monotonic() - t0, 2))
                    cluster.start(victim)
                    wait_for(partial(broker_up, stack, victim), 60, what="broker back up")
                    time.sleep(5)
                results["kill_to_browser_s"] = latencies
                browser.close()
        finally:
            demo.terminate()
            demo.wait(20)
    report(results)


def report(results: dict[str, Any]) -> None:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## Foundation (issue 2), {when}\n",
        "Command: `make bench` (`.venv/bin/python -m bench.run`). Machine: "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; the test stack (own Redis, 3 KRaft nodes with 384 MB "
        "heaps, Daphne, watcher, Celery worker and beat) plus `manage.py demo` traffic, all on this machine.\n",
        f"Scale: {results['scale']['topics']} topics, {results['scale']['partitions']} partitions, "
        f"{results['scale']['brokers']} brokers.\n",
        "| what | median | p95 | max | Kafka calls on the request path | budget |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in (("overview", "overview page"), ("layout", "topic layout page"),
                       ("layout_filtered", "topic layout, filtered"), ("api_partitions", "API: a topic's partitions")):
        r = results[key]
        lines.append(f"| {label} (server time, n={r['n']}) | {r['median_ms']:.1f} ms | {r['p95_ms']:.1f} ms | {r['max_ms']:.1f} ms | "
                     f"{', '.join(map(str, r['kafka_calls']))} | <= 150 ms |")
    k = results["kill_to_browser_s"]
    lines += [
        "",
        f"SIGKILL of a broker -> overview in Chromium shows it down, no reload: {', '.join(f'{x} s' for x in k)} "
        f"(broker.session.timeout.ms = {SESSION_TIMEOUT_S:.0f} s; budget {SESSION_TIMEOUT_S + 2:.0f} s).",
        "",
        "| watcher, 20 s window | cycles/s | Kafka requests in the last cycle | offset calls/s | CPU | max RSS |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in (("watcher_1_client", "1 browser tab"), ("watcher_51_clients", "1 tab + 50 websocket clients")):
        w = results[key]
        reqs = ", ".join(f"{n} {c}" for n, c in sorted(w["requests_last_cycle"].items()))
        lines.append(f"| {label} | {w['cycles_per_s']} | {reqs} | {w['offset_calls_per_s']} | {w['cpu_percent']} % | {w['max_rss_mb']} MB |")
    lines.append(f"\nThe 50 extra websocket clients received {results['messages_to_50_sockets_in_20s']} messages in the 20 s window.\n")
    text = "\n".join(lines)
    print(text)
    path = ROOT / "docs" / "benchmarks.md"
    if not path.exists():
        path.write_text("# Benchmarks\n\nEach section is one run of the command it names, on this project's 2-core machine.\n")
    with path.open("a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
