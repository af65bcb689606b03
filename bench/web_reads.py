"""A reading process's side of the simulated cluster (issue 11): each new snapshot version read as a
web process reads it.

`TEST_REDIS_PORT=6395 .venv/bin/python -m bench.web_reads --partitions 300000 --groups 50000
--change-rate 0.01 --seconds 100` runs `bench.simulate` (the watcher on the simulated cluster) in a
child process, waits `--warmup` seconds (its model, first cycle and first passes), then reads the
snapshot with `loader.load` every 50 ms for `--seconds`, as a web process does before rendering a
live fragment (same Redis, nothing else cached). Ends by printing one JSON line: versions read and
missed, each new version's read time and the time from its cycle's start (`taken_at`) to the end
of its read (p50 / p99 / max), and the child's own figures. The child and this process share the
machine's cores, as a web process and the watcher would on one host.

`--views topics,groups,overview` measures the live pages' push instead of polling: one live
websocket per view (console.sockets.LiveConsumer, through the Channels layer on the same Redis,
in this process as in a web process; a logged-in user) receives the watcher's broadcasts and sends
its redrawn fragments. For each broadcast: from the broadcast's sending (`sent_at`) to its status
reaching the socket, and to the first fragment drawn from its version or a later one (fragments say
the version they were drawn from; the version read, the fragment rendered: what the browser then
puts in the page), and from the cycle's start to that fragment; the broadcasts before the first
fragment (the process reading everything and making every row once, as after it starts) apart. With
the child's push figure (a change in the model to the broadcast) they give the time from a change
to the browser: `change_to_page_*` adds, for each leader move the child saw, its push (the child
counts them per version with `--push-by-version`) and its version's broadcast -> page.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

from bench.run import setup_django


def quantile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3) if ordered else None


def main() -> None:
    parser = scale_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--warmup", type=float, default=75, help="seconds before reading (the watcher's warm-up)")
    parser.add_argument("--views", default="", help="live views to open (comma-separated: topics, groups, overview, ...)"
                        " instead of polling the store")
    parser.add_argument("--sockets-per-view", type=int, default=1, help="sockets open on each view (as many open pages)")
    args = parser.parse_args()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.simulate", "--partitions", str(args.partitions), "--groups", str(args.groups),
         "--change-rate", str(args.change_rate), "--seconds", str(args.seconds + args.warmup),
         *(["--push-by-version"] if args.views else [])],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy())
    try:
        time.sleep(args.warmup)
        setup_django()
        if args.views:
            views = asyncio.run(live_views([v for v in args.views.split(",") if v], args.seconds, child, args.sockets_per_view))
            out, _ = child.communicate(timeout=args.seconds + args.warmup + 600)
            pushes = child_result(out).get("push_by_version", {})
            for figures in views.values():
                figures.update(change_to_page(pushes, figures.pop("page_after")))
            print(json.dumps({"views": views, "watcher": watcher_figures(out)}), flush=True)
            return
        from console.snapshots import loader, store

        reads: list[tuple[int, float, float]] = []
        seen: int | None = None
        first: int | None = None
        end = time.monotonic() + args.seconds
        while time.monotonic() < end and child.poll() is None:
            started = time.perf_counter()
            try:
                snap = loader.load("sim")
            except store.StoreUnavailable:
                snap = None
            took = time.perf_counter() - started
            if snap is not None and snap.version != seen:
                if seen is None:
                    first = snap.version  # (the first read is of everything: not counted)
                elif snap.taken_at is not None:
                    reads.append((snap.version, took, time.time() - snap.taken_at))
                seen = snap.version
            time.sleep(0.05)
        out, _ = child.communicate(timeout=args.seconds + args.warmup + 600)
    finally:
        if child.poll() is None:
            child.kill()
    times, ages = [r[1] for r in reads], [r[2] for r in reads]
    span = (reads[-1][0] - (first or 0)) if reads else 0
    print(json.dumps({
        "versions_read": len(reads),
        "versions_missed": max(0, span - len(reads)),  # (written while a read ran: the next read catches up)
        "read_p50_seconds": quantile(times, 0.5), "read_p99_seconds": quantile(times, 0.99),
        "read_max_seconds": quantile(times, 1.0),
        "taken_to_read_p50_seconds": quantile(ages, 0.5), "taken_to_read_p99_seconds": quantile(ages, 0.99),
        "taken_to_read_max_seconds": quantile(ages, 1.0),
        "watcher": watcher_figures(out),
    }), flush=True)


def scale_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The simulated cluster's size and rate of change, and the seconds measured (this bench's and
    bench.browser_push's)."""
    parser.add_argument("--partitions", type=int, default=300_000)
    parser.add_argument("--groups", type=int, default=50_000)
    parser.add_argument("--change-rate", type=float, default=0.01)
    parser.add_argument("--seconds", type=float, default=100)
    return parser


def child_result(out: str) -> dict[str, Any]:
    """The child's (bench.simulate's) last line of JSON."""
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return dict(json.loads(lines[-1])) if lines else {}


def change_to_page(pushes: dict[str, dict[str, int]], page_after: dict[int, float]) -> dict[str, Any]:
    """From each leader move in the model to the page showing it: its push (the move to the broadcast
    of the version that first held it, in 10 ms buckets, from the child) plus that version's
    broadcast -> page (the first fragment drawn from it or a later one). An upper bound by the
    publish's tail (the push ends after the broadcast is sent). Versions broadcast before the first
    fragment or after the run are left out."""
    counted: dict[float, int] = {}
    for version, buckets in pushes.items():
        after = page_after.get(int(version))
        if after is None:
            continue
        for bucket, n in buckets.items():
            total = round((int(bucket) + 0.5) / 100 + after, 3)
            counted[total] = counted.get(total, 0) + n
    ordered = sorted(counted.items())
    count = sum(counted.values())

    def at(q: float) -> float | None:
        wanted, seen = max(1, -(-count * q // 1)), 0
        for value, n in ordered:
            seen += n
            if seen >= wanted:
                return value
        return None

    return {"changes_shown": count, "change_to_page_p50_seconds": at(0.5), "change_to_page_p90_seconds": at(0.9),
            "change_to_page_p99_seconds": at(0.99), "change_to_page_max_seconds": ordered[-1][0] if ordered else None,
            "changes_over_2s": sum(n for value, n in ordered if value > 2.0)}


def watcher_figures(out: str) -> dict[str, Any]:
    """The child's (bench.simulate's) figures."""
    watcher = child_result(out)
    return {k: watcher.get(k) for k in ("cycle_p50_seconds", "cycle_p99_seconds", "cycles_over_1s", "push_p50_seconds",
                                         "push_p99_seconds", "pushes_over_2s", "spurious_events",
                                         "machine_reference_seconds")}


async def live_views(views: list[str], seconds: float, child: subprocess.Popen[str], per_view: int = 1) -> dict[str, Any]:
    """Each view's live sockets (`per_view` of each: "view", "view#2", ...) for `seconds`: per broadcast, sent ->
    status, sent -> last fragment, cycle start -> last fragment (p50 / p99 / max), and how many broadcasts and
    fragments came."""
    from types import SimpleNamespace

    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator
    from django.conf import settings

    from console.gateway.config import ClusterConfig
    from console.routing import websocket_urlpatterns

    settings.KAFKA_CLUSTERS = (*settings.KAFKA_CLUSTERS, ClusterConfig(name="sim", bootstrap_servers="127.0.0.1:9"))

    async def watch(view: str) -> dict[str, Any]:
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/clusters/sim/live/?view={view}")
        comm.scope["user"] = SimpleNamespace(is_authenticated=True)
        connected, code = await comm.connect()
        if not connected:
            raise SystemExit(f"the {view} socket was refused ({code})")
        statuses: list[tuple[int, float, float, float]] = []  # (version, arrived, sent_at, taken_at)
        drawn: list[tuple[int, float]] = []  # (version drawn, arrived)
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end and child.poll() is None:
                try:  # (not receive_json_from: its timeout stops the consumer)
                    output = await asyncio.wait_for(comm.output_queue.get(), max(0.1, min(30.0, end - time.monotonic())))
                except TimeoutError:
                    continue
                message = json.loads(output["text"])
                now = time.time()
                if message["type"] == "status" and message.get("sent_at"):
                    statuses.append((message["version"], now, message["sent_at"], message["taken_at"]))
                elif message["type"] == "fragment" and message.get("version") is not None:
                    drawn.append((message["version"], now))
        finally:
            await comm.disconnect()
        return page_figures(statuses, drawn)

    names = [v if i == 0 else f"{v}#{i + 1}" for v in views for i in range(per_view)]
    results = await asyncio.gather(*(watch(name.partition("#")[0]) for name in names))
    return dict(zip(names, results, strict=True))


def page_figures(statuses: list[tuple[int, float, float, float]], drawn: list[tuple[int, float]]) -> dict[str, Any]:
    """One page's figures from its broadcasts, (version, arrived, sent_at, taken_at), and its fragments,
    (version drawn, shown), all in seconds of the system clock: per broadcast, sent -> status, sent -> the
    first fragment drawn from its version or a later one, cycle start -> that fragment (p50 / p90 / p99 /
    max), the five slowest, and `page_after` (each version's broadcast -> page, for `change_to_page`)."""
    # Until the first fragment the process read everything and made every row once, as a web process
    # does once after it starts: those broadcasts are counted apart.
    warm_from = drawn[0][1] if drawn else float("inf")
    cold = [s for s in statuses if s[1] <= warm_from]
    statuses = [s for s in statuses if s[1] > warm_from]
    hop, sent_to_fragment, taken_to_fragment = [], [], []
    slowest: list[tuple[float, int, float]] = []  # (broadcast -> page, version, seconds into the run)
    page_after: dict[int, float] = {}
    for version, arrived, sent_at, taken_at in statuses:
        hop.append(arrived - sent_at)
        shown = next((at for v, at in drawn if v >= version), None)
        if shown is not None:
            page_after[version] = max(0.0, shown - sent_at)
            sent_to_fragment.append(max(0.0, shown - sent_at))
            taken_to_fragment.append(shown - taken_at)
            slowest.append((round(shown - sent_at, 3), version, round(sent_at - statuses[0][2], 1)))
    return {"broadcasts": len(statuses), "fragments": len(drawn), "broadcasts_shown": len(sent_to_fragment),
            "first_fragment_after_seconds": round(warm_from - cold[0][2], 3) if cold and drawn else None,
            "broadcasts_before_it": len(cold),
            **spread("sent_to_status", hop), **spread("sent_to_fragment", sent_to_fragment),
            **spread("taken_to_fragment", taken_to_fragment), "slowest": sorted(slowest, reverse=True)[:5],
            "page_after": page_after}


def spread(name: str, values: list[float]) -> dict[str, float | None]:
    return {f"{name}_p50_seconds": quantile(values, 0.5), f"{name}_p90_seconds": quantile(values, 0.9),
            f"{name}_p99_seconds": quantile(values, 0.99),
            f"{name}_max_seconds": quantile(values, 1.0)}


if __name__ == "__main__":
    main()
