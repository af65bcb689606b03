"""`manage.py demo`: demo topics plus producers and consumer groups at modest rates.

Every topic gets `--rate` messages a second. The groups are built so that the console shows each
lag status (Burrow's rules, ALGORITHMS.md 2; the watcher stores one window entry per offsets
sample, WATCHER_OFFSETS_INTERVAL, and judges a partition once its 10-entry window is full):

- demo-healthy (classic) and demo-kip848 (Kafka 4's new consumer protocol, KIP-848) read
  demo.orders and commit four times a second, so the lag at a sample is 0 or a message or two: OK.
- demo-lagging reads demo.invoices (one partition, so the rate at which its committed offset moves
  is exact) at 3 messages a second against 20 written: it commits every second, yet the lag grows
  at every sample: WARN, about 10 samples after it starts.
- demo-stopped reads one batch of demo.payments, commits it, and then hangs: its member stays in the
  group and never commits again while the topic keeps growing, so every sample stores the same
  offset with a growing lag: STALL (ERR), about 10 samples after its commit. Once the console has
  judged it (and at least 12 samples have passed) the consumer goes away: with no member there is no
  commit any more, and once the time since the last one exceeds the span of the window the
  partitions are STOP. It stays that way for as long as the watcher runs. Restarted, the demo does it
  again from the group's committed offsets, so the group becomes ERR, then STOP, again.
- demo-queue is a share group (KIP-932) on demo.orders.

On the local cluster a line a second is also appended to the file the local Connect worker's demo
source connector reads (console/devcluster_connect.py), which its sink connector writes back out.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from console import gateway, snapshots
from console.devcluster_connect import demo_source_path
from console.gateway.errors import GatewayError
from console.gateway.traffic import GroupConsumer, MessageProducer, ShareGroupConsumer
from consumers_app.lagstatus import DEFAULT_WINDOW

TOPICS = [
    # name, partitions, replication factor, configs
    ("demo.orders", 6, 3, {"min.insync.replicas": "2"}),
    ("demo.payments", 3, 3, {}),
    ("demo.clicks", 12, 2, {}),
    ("demo.audit", 1, 1, {"cleanup.policy": "compact"}),
    ("demo.invoices", 1, 3, {}),
]
# Tiered storage (KIP-405; on the local cluster's plaintext mode, console/devcluster.py): 1 MiB segments
# kept locally for a minute, so the topic's older segments move to remote storage within minutes.
TIERED_TOPIC = ("demo.archive", 2, 3, {"remote.storage.enable": "true", "segment.bytes": str(1024 * 1024),
                                       "local.retention.ms": "60000", "retention.ms": str(7 * 24 * 3600 * 1000)})
TIERED_PADDING = 2000  # bytes per record on the tiered topic: a segment fills in about a minute at the default rate
GROUPS = ("demo-healthy", "demo-kip848", "demo-lagging", "demo-stopped", "demo-queue")
STOPPED_GROUP = "demo-stopped"
# The stopped group's consumer hangs at most this long waiting for the console to judge it, then goes.
STOPPED_HANG_MAX = 600.0


class Command(BaseCommand):
    help = "Create demo topics and run producers and consumer groups until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", default=None, help="configured cluster name (default: the first)")
        parser.add_argument("--rate", type=float, default=20.0, help="messages per second per topic")

    def handle(self, *args: Any, **opts: Any) -> None:
        name = opts["cluster"] or gateway.cluster_configs()[0].name
        gw = gateway.for_cluster(name)
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self._create_topics(gw, stop)
        if stop.is_set():
            return
        tiered = self._create_tiered_topic(gw)
        threads = [
            threading.Thread(target=self._produce, args=(gw, opts["rate"], stop, tiered), daemon=True),
            threading.Thread(target=self._consume, args=(gw, "demo-healthy", ["demo.orders"], 1000, 0.25, stop), daemon=True),
            threading.Thread(target=self._consume, args=(gw, "demo-lagging", ["demo.invoices"], 3, 1.0, stop), daemon=True),
            # Kafka 4's new consumer protocol (KIP-848) and a share group (KIP-932), beside the classic groups.
            threading.Thread(target=self._consume, args=(gw, "demo-kip848", ["demo.orders"], 1000, 0.25, stop),
                             kwargs={"protocol": "consumer"}, daemon=True),
            threading.Thread(target=self._share, args=(gw, "demo-queue", ["demo.orders"], stop), daemon=True),
            threading.Thread(target=self._stopped_group, args=(gw, name, stop), daemon=True),
        ]
        if any(c.name == name and c.local for c in gateway.cluster_configs()):
            threads.append(threading.Thread(target=self._connect_lines, args=(stop,), daemon=True))
        for t in threads:
            t.start()
        self.stdout.write(f"demo traffic running on cluster {name}")
        stop.wait()
        for t in threads:
            t.join(5)  # consumers leave their groups on the way out

    def _create_topics(self, gw: Any, stop: threading.Event) -> None:
        pending = list(TOPICS)
        while pending and not stop.is_set():
            try:
                existing = {t.name for t in gw.metadata().topics}
                for topic, partitions, rf, configs in pending:
                    if topic not in existing:
                        gw.create_topic(topic, partitions, rf, configs)
                        self.stdout.write(f"created {topic}")
                pending = []
            except GatewayError as exc:
                self.stderr.write(f"waiting for the cluster: {exc.message}")
                stop.wait(3)

    def _create_tiered_topic(self, gw: Any) -> list[str]:
        """The tiered topic, when the cluster has remote storage (a cluster without it refuses the topic)."""
        topic, partitions, rf, configs = TIERED_TOPIC
        try:
            if topic not in {t.name for t in gw.metadata().topics}:
                gw.create_topic(topic, partitions, rf, configs)
                self.stdout.write(f"created {topic} (remote storage enabled)")
        except GatewayError as exc:
            self.stderr.write(f"no tiered demo topic: {exc.message}")
            return []
        return [topic]

    def _connect_lines(self, stop: threading.Event) -> None:
        """A line a second for the Connect demo pipeline's file source (read once the worker is up)."""
        path = demo_source_path(settings.DEVCLUSTER_CONNECT_DIR)
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 0
        while not stop.wait(1.0):
            with path.open("a") as f:
                f.write(f"demo line {n} at {time.strftime('%H:%M:%S')}\n")
            n += 1

    def _produce(self, gw: Any, rate: float, stop: threading.Event, tiered: list[str]) -> None:
        producer = MessageProducer(gw)
        n = 0
        while not stop.is_set():
            for topic in [t[0] for t in TOPICS] + tiered:
                body: dict[str, Any] = {"id": n, "topic": topic, "amount": round(random.uniform(1, 500), 2), "ts": time.time()}
                if topic in tiered:
                    body["note"] = "x" * TIERED_PADDING
                try:
                    producer.send(topic, json.dumps(body).encode(), key=f"key-{n % 50}".encode())
                except GatewayError as exc:
                    self.stderr.write(f"produce failed: {exc.message}")
            n += 1
            stop.wait(1.0 / rate)
        producer.flush()

    def _consume(self, gw: Any, group: str, topics: list[str], per_poll: int, period: float, stop: threading.Event,
                 protocol: str = "classic") -> None:
        """Read up to `per_poll` messages and commit them, once every `period` seconds."""
        consumer = GroupConsumer(gw, group, topics, **({"group.protocol": protocol} if protocol != "classic" else {}))
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    consumer.poll(per_poll, period)
                    consumer.commit()
                except GatewayError as exc:
                    self.stderr.write(f"{group}: {exc.message}")
                stop.wait(max(0.0, period - (time.monotonic() - started)))
        finally:
            consumer.close()

    def _share(self, gw: Any, group: str, topics: list[str], stop: threading.Event) -> None:
        try:
            consumer = ShareGroupConsumer(gw, group, topics)
        except Exception as exc:  # noqa: BLE001 - a cluster without share groups still runs the rest of the demo
            self.stderr.write(f"{group}: no share group ({exc})")
            return
        try:
            while not stop.is_set():
                try:
                    consumer.poll(1.0)
                except GatewayError as exc:
                    self.stderr.write(f"{group}: {exc.message}")
                    stop.wait(1.0)
        finally:
            consumer.close()

    def _stopped_group(self, gw: Any, cluster: str, stop: threading.Event) -> None:
        """Read a batch of demo.payments and commit it, hang (a member, never committing: STALL), then
        go away (no member: STOP). See the module docstring for the timing."""
        consumer = GroupConsumer(gw, STOPPED_GROUP, ["demo.payments"])
        try:
            got = 0
            while not stop.is_set() and got == 0:  # the producer writes there from the start
                try:
                    got = consumer.poll(100, 1.0)
                    got += consumer.poll(100, 1.0)  # a second poll: usually every partition has answered by then
                except GatewayError as exc:
                    self.stderr.write(f"{STOPPED_GROUP}: {exc.message}")
                    stop.wait(1.0)
            # The producer moves on meanwhile, so the committed offsets are behind from the first sample.
            stop.wait(1.0)
            committed = False
            while not stop.is_set() and not committed:
                try:
                    consumer.commit()
                    committed = True
                except GatewayError as exc:
                    self.stderr.write(f"{STOPPED_GROUP}: {exc.message}")
                    stop.wait(1.0)
            if stop.is_set():
                return
            self.stdout.write(f"{STOPPED_GROUP}: committed {got} messages, now hanging without committing")
            self._hang_until_judged(cluster, time.monotonic(), stop)
        finally:
            consumer.close()
        if not stop.is_set():
            self.stdout.write(f"{STOPPED_GROUP}: consumer gone")

    def _hang_until_judged(self, cluster: str, since: float, stop: threading.Event) -> None:
        """Wait until the console shows the stopped group as ERR (its window full of samples of this
        hung member), but at least 12 samples, so an ERR left from before a restart is not taken for
        it; at most STOPPED_HANG_MAX (no watcher running, say). Leaving before the window is full
        would leave the group OK for good: with no member, an unchanged offset adds no entry."""
        interval = float(settings.WATCHER_OFFSETS_INTERVAL)
        at_least = since + 1.2 * DEFAULT_WINDOW * interval
        while not stop.wait(interval):
            now = time.monotonic()
            if now - since >= STOPPED_HANG_MAX:
                return
            if now < at_least:
                continue
            snap = snapshots.watched(cluster).snapshot  # (Redis down: the last copy, or none)
            group = snap.groups.get(STOPPED_GROUP) if snap is not None else None
            if group is not None and group.status == "ERR":
                return
