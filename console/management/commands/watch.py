"""`manage.py watch`: run the watcher for every configured cluster until stopped."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand

from console.watcher.runner import run


class Command(BaseCommand):
    help = "Poll every configured cluster, keep snapshots in Redis, record and broadcast changes."

    def handle(self, *args: Any, **opts: Any) -> None:
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self.stdout.write("watcher started")
        run(stop)
