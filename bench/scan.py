"""Benchmark of the message-browser engine (issue 3): `.venv/bin/python -m bench.scan --bootstrap HOST:PORT`.

Fills a 6-partition topic with 1,000,000 messages of about 1 KB (half JSON orders, half text log
lines; 1 in 101 carries status FAILED), then measures:
  1. a full forward scan with a regex that matches those ~1 % (raw pre-filter plus full matcher),
     reported as messages read per second;
  2. the first page: start=newest, newest_n=50, limit=50 (and the backward newest page).
Prints a Markdown section and appends it to docs/benchmarks.md. The topic is kept for reruns
(`--reuse` skips producing when it is already full); `--delete` removes it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import Producer

from console.gateway import for_bootstrap
from console.gateway.client import ClusterGateway
from console.gateway.errors import InvalidRequest
from console.gateway.messages.scan import scan
from console.gateway.messages.scan_spec import ScanProgress, ScanSpec
from topics_app.message_filters import FilterSpec, build_matcher, build_raw_matcher

ROOT = Path(__file__).resolve().parent.parent
REGEX = r"status\W{1,4}FAILED"
MARK_EVERY = 101  # 1 message in 101 matches: ~0.99 %, so a limit of 10,000 never ends the full scan early


def payload(i: int, size: int, filler: str, rng: random.Random) -> bytes:
    status = "FAILED" if i % MARK_EVERY == 42 else rng.choice(("OK", "PENDING", "SHIPPED", "RETRY"))
    if i % 2 == 0:
        doc = {
            "id": i,
            "type": "order",
            "status": status,
            "customer": {"id": rng.randrange(10**6), "country": rng.choice(("DE", "FR", "US", "JP", "BR"))},
            "items": [{"sku": f"SKU-{rng.randrange(10**5):05d}", "qty": rng.randrange(1, 9)} for _ in range(3)],
            "note": "",
        }
        head = json.dumps(doc)
        start = rng.randrange(len(filler) - size)
        doc["note"] = filler[start : start + max(0, size - len(head))]
        return json.dumps(doc).encode()
    head = f"2026-11-22T03:{i % 60:02d}:{i % 59:02d}Z INFO checkout id={i} status={status} msg="
    start = rng.randrange(len(filler) - size)
    return (head + filler[start : start + max(0, size - len(head))]).encode()


def fill(bootstrap: str, gw: ClusterGateway, topic: str, count: int, partitions: int, replication: int, size: int,
         reuse: bool) -> float | None:
    """Create and fill the topic; returns the seconds it took, or None when an existing full topic was reused."""
    existing = {t.name: t for t in gw.metadata().topics}
    if topic in existing:
        ends = gw.list_offsets([(topic, p.partition) for p in existing[topic].partitions], "latest")
        if reuse and len(ends) == partitions and sum(ends.values()) >= count:
            return None
        gw.delete_topic(topic)
        time.sleep(2)
    gw.create_topic(topic, partitions, replication)
    time.sleep(1)
    rng = random.Random(3)
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima")
    filler = " ".join(rng.choice(words) + str(rng.randrange(1000)) for _ in range(40_000))
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000, "acks": "1",
                         "queue.buffering.max.kbytes": 512 * 1024, "log_level": 2})
    failures = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    started = time.monotonic()
    for i in range(count):
        value = payload(i, size, filler, rng)
        while True:
            try:
                producer.produce(topic, value=value, key=str(i).encode(), partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
            if i % 200_000 == 0:
                print(f"  produced {i:,}", file=sys.stderr)
    producer.flush(120)
    if failures:
        raise SystemExit(f"{len(failures)} messages were not written, e.g. {failures[0]}")
    return time.monotonic() - started


def timed_scan(gw: ClusterGateway, spec: ScanSpec, fspec: FilterSpec | None) -> tuple[float, float, int, ScanProgress, int]:
    matcher = build_matcher(fspec) if fspec else None
    raw = build_raw_matcher(fspec) if fspec else None
    cpu0, t0 = time.process_time(), time.perf_counter()
    records, progress = scan(gw, spec, matcher, raw_matcher=raw)
    return time.perf_counter() - t0, time.process_time() - cpu0, len(records), progress, progress.scanned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True, help="bootstrap servers of the cluster to use")
    parser.add_argument("--topic", default="bench-scan")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--size", type=int, default=1024, help="approximate value size in bytes")
    parser.add_argument("--runs", type=int, default=3, help="timed full scans")
    parser.add_argument("--reuse", action="store_true", help="keep an existing topic that already holds enough messages")
    parser.add_argument("--delete", action="store_true", help="delete the topic at the end")
    parser.add_argument("--no-append", action="store_true", help="print the section without appending it to docs/benchmarks.md")
    args = parser.parse_args()

    gw = for_bootstrap(args.bootstrap, timeout=10.0)
    print(f"filling '{args.topic}' with {args.messages:,} messages ...", file=sys.stderr)
    fill_s = fill(args.bootstrap, gw, args.topic, args.messages, args.partitions, args.replication_factor, args.size, args.reuse)
    fspec = FilterSpec(regex=REGEX)

    scans = []
    for run in range(args.runs):
        wall, cpu, matched, progress, scanned = timed_scan(gw, ScanSpec(args.topic, limit=10_000), fspec)
        scans.append((wall, cpu, matched, scanned))
        print(f"  full scan {run + 1}: {scanned:,} read, {matched:,} matched in {wall:.2f} s "
              f"({scanned / wall:,.0f} msg/s, CPU {cpu:.2f} s); {progress.reason}", file=sys.stderr)
    nofilter = timed_scan(gw, ScanSpec(args.topic, limit=10_000), None)  # limit ends it early: the cost of a page
    first_pages = [timed_scan(gw, ScanSpec(args.topic, start="newest", newest_n=50, limit=50), None)[0] for _ in range(10)]
    back_pages = [timed_scan(gw, ScanSpec(args.topic, start="newest", direction="backward", limit=50), None)[0] for _ in range(10)]
    filtered_back = timed_scan(gw, ScanSpec(args.topic, start="newest", direction="backward", limit=50), fspec)
    try:
        scan(gw, ScanSpec(args.topic, start="offset", offset=args.messages * 10), None)
        beyond = "no error (wrong)"
    except InvalidRequest as exc:
        beyond = f"InvalidRequest: {exc}"

    walls = sorted(s[0] for s in scans)
    best = min(scans)
    rate_median = scans[0][3] / statistics.median(walls)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = ".venv/bin/python -m bench.scan " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    lines = [
        f"## Message scan (issue 3), {stamp}",
        "",
        f"Command: `{command}`. Machine: {os.cpu_count()} cores, Python {platform.python_version()}; a 3-node KRaft "
        "devcluster (512 MB heaps) on the same machine, beside other work.",
        "",
        f"Topic: {args.messages:,} messages of ~{args.size} B (half JSON, half text) in {args.partitions} partitions, "
        f"replication factor {args.replication_factor}, no compression"
        + (f"; produced in {fill_s:.1f} s." if fill_s is not None else " (reused)."),
        "",
        "| what | messages read | matched | wall time | rate | CPU of the scanning process |",
        "|---|---|---|---|---|---|",
    ]
    for i, (wall, cpu, matched, scanned) in enumerate(scans, 1):
        lines.append(f"| full scan, regex `{REGEX}` (run {i}) | {scanned:,} | {matched:,} | {wall:.2f} s | "
                     f"{scanned / wall:,.0f} msg/s | {cpu:.2f} s |")
    lines += [
        f"| no filter, limit 10,000 | {nofilter[4]:,} | {nofilter[2]:,} | {nofilter[0] * 1000:.0f} ms | | {nofilter[1]:.2f} s |",
        f"| regex, backward from newest, limit 50 | {filtered_back[4]:,} | {filtered_back[2]:,} | "
        f"{filtered_back[0] * 1000:.0f} ms | | {filtered_back[1]:.2f} s |",
        "",
        f"Full scan: median {rate_median:,.0f} msg/s, best {best[3] / best[0]:,.0f} msg/s (budget >= 100,000 msg/s).",
        "",
        f"First page (start=newest, newest_n=50, limit=50, n=10): median {statistics.median(first_pages) * 1000:.0f} ms, "
        f"max {max(first_pages) * 1000:.0f} ms. Newest page read backward (limit 50, n=10): median "
        f"{statistics.median(back_pages) * 1000:.0f} ms, max {max(back_pages) * 1000:.0f} ms. Each includes creating the "
        "consumer, topic metadata, both watermarks and the fetch.",
        "",
        f"Offset beyond the end: {beyond}",
        "",
    ]
    section = "\n".join(lines)
    print(section)
    if not args.no_append:
        path = ROOT / "docs" / "benchmarks.md"
        text = path.read_text()
        path.write_text(text.rstrip("\n") + "\n\n" + section)
    if args.delete:
        gw.delete_topic(args.topic)


if __name__ == "__main__":
    main()
