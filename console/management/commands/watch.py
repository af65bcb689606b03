"""`manage.py watch`: run the watcher for every configured cluster until stopped.

The watcher runs in a child process that this one starts again when it dies (`--child` runs it
directly), because its threads call into native client libraries (librdkafka, numpy) whose crash
(a SIGSEGV or SIGABRT no Python code can catch) would otherwise stop every live page until someone
restarted the console. The child keeps the parent's lease owner, so it takes its clusters back at
once instead of waiting for the lease to expire.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from console.lifecycle import die_with_parent, exit_reason, tune_malloc

log = logging.getLogger(__name__)

# A child that dies sooner than this after starting is started again only after a growing pause
# (1, 2, 4 ... up to MAX_PAUSE seconds), so a crash at start-up does not spin.
STABLE_SECONDS = 30.0
MAX_PAUSE = 30.0


def next_pause(pause: float, lived: float) -> float:
    """The pause before the next start: none after a child that ran a while, else doubled."""
    if lived >= STABLE_SECONDS:
        return 0.0
    return min(MAX_PAUSE, max(1.0, pause * 2))


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the supervising parent dies (Linux), so a killed
    supervisor never leaves a watcher running under its lease."""
    die_with_parent()


class Command(BaseCommand):
    help = "Poll every configured cluster, keep snapshots in Redis, record and broadcast changes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--child", action="store_true", help="run the watcher in this process (no restarts)")

    def handle(self, *args: Any, **opts: Any) -> None:
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        if opts["child"]:
            from console.watcher.runner import run

            tune_malloc()  # (before the watcher's threads start)
            self.stdout.write("watcher started")
            self.stdout.flush()
            run(stop)
            return
        self.supervise(stop)

    def supervise(self, stop: threading.Event) -> None:
        # (the children run with this process's environment, and its name as theirs)
        env = {**os.environ, "WATCHER_OWNER": settings.WATCHER_OWNER or f"{socket.gethostname()}:{os.getpid()}"}
        command = [sys.executable, sys.argv[0], "watch", "--child"]
        pause = 0.0
        while not stop.is_set():
            started = time.monotonic()
            child = subprocess.Popen(command, env=env, preexec_fn=_die_with_parent)
            while child.poll() is None:
                if stop.wait(0.5):
                    child.terminate()
                    try:
                        child.wait(20)
                    except subprocess.TimeoutExpired:
                        child.kill()
                        child.wait(5)
                    return
            lived = time.monotonic() - started
            reason = exit_reason(child.returncode)
            pause = next_pause(pause, lived)
            message = (f"The watcher process ended ({reason}) after {lived:.0f} s and was started again"
                       + (f" after {pause:.0f} s." if pause else "."))
            self.stderr.write(message)
            self.record(message, reason)
            if pause and stop.wait(pause):
                return

    def record(self, message: str, reason: str) -> None:
        """An event on every cluster's timeline: the live pages paused while the watcher was down."""
        try:
            from console import gateway
            from console.watcher import registry
            from console.watcher.registry import EventRow

            now = datetime.now(tz=UTC)
            registry.events().save([EventRow(cluster=c.name, at=now, kind="watcher", severity="warning", message=message,
                                             details={"reason": reason}) for c in gateway.cluster_configs()])
        except Exception:  # noqa: BLE001 - the restart matters more than its record
            log.warning("could not record the watcher's restart", exc_info=True)
