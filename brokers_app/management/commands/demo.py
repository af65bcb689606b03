"""`manage.py demo`: demo topics plus producers and consumer groups at modest rates.

Groups: demo-healthy keeps up with demo.orders, demo-lagging reads demo.clicks slower than it
is written, demo-stopped read part of demo.payments once and then stopped.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console import gateway
from console.gateway.client import GroupConsumer, MessageProducer, ShareGroupConsumer
from console.gateway.errors import GatewayError

TOPICS = [
    # name, partitions, replication factor, configs
    ("demo.orders", 6, 3, {"min.insync.replicas": "2"}),
    ("demo.payments", 3, 3, {}),
    ("demo.clicks", 12, 2, {}),
    ("demo.audit", 1, 1, {"cleanup.policy": "compact"}),
]


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
        threads = [
            threading.Thread(target=self._produce, args=(gw, opts["rate"], stop), daemon=True),
            threading.Thread(target=self._consume, args=(gw, "demo-healthy", ["demo.orders"], 1000, stop), daemon=True),
            threading.Thread(target=self._consume, args=(gw, "demo-lagging", ["demo.clicks"], 5, stop), daemon=True),
            # Kafka 4's new consumer protocol (KIP-848) and a share group (KIP-932), beside the classic groups.
            threading.Thread(target=self._consume, args=(gw, "demo-kip848", ["demo.orders"], 1000, stop),
                             kwargs={"protocol": "consumer"}, daemon=True),
            threading.Thread(target=self._share, args=(gw, "demo-queue", ["demo.orders"], stop), daemon=True),
        ]
        self._stopped_group(gw)
        for t in threads:
            t.start()
        self.stdout.write(f"demo traffic running on cluster {name}")
        stop.wait()

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

    def _produce(self, gw: Any, rate: float, stop: threading.Event) -> None:
        producer = MessageProducer(gw)
        n = 0
        while not stop.is_set():
            for topic, _, _, _ in TOPICS:
                body = {"id": n, "topic": topic, "amount": round(random.uniform(1, 500), 2), "ts": time.time()}
                try:
                    producer.send(topic, json.dumps(body).encode(), key=f"key-{n % 50}".encode())
                except GatewayError as exc:
                    self.stderr.write(f"produce failed: {exc.message}")
            n += 1
            stop.wait(1.0 / rate)
        producer.flush()

    def _consume(self, gw: Any, group: str, topics: list[str], per_second: int, stop: threading.Event,
                 protocol: str = "classic") -> None:
        consumer = GroupConsumer(gw, group, topics, **({"group.protocol": protocol} if protocol != "classic" else {}))
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    consumer.poll(per_second, 1.0)
                    consumer.commit()
                except GatewayError as exc:
                    self.stderr.write(f"{group}: {exc.message}")
                stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))
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

    def _stopped_group(self, gw: Any) -> None:
        """Read some of demo.payments once, commit, and leave: a group that has stopped."""
        consumer = GroupConsumer(gw, "demo-stopped", ["demo.payments"])
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and consumer.poll(50, 1.0) == 0:
                pass
            consumer.commit()
        except GatewayError as exc:
            self.stderr.write(f"demo-stopped: {exc.message}")
        finally:
            consumer.close()
