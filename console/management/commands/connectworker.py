"""`manage.py connectworker up|down|status|kill`: the local Kafka Connect worker (console/devcluster_connect.py)."""

from __future__ import annotations

import signal
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import devcluster_secure, gateway
from console.devcluster import VOTERS, DevCluster, DevClusterError
from console.devcluster_connect import ConnectWorker
from console.devcluster_mirror import install_mirror, mirror_configs
from console.gateway.errors import GatewayError


def local_worker() -> ConnectWorker:
    """The worker beside the local cluster, with the cluster's login when it runs in secure mode."""
    cluster = DevCluster(settings.DEVCLUSTER_DIR, settings.DEVCLUSTER_BASE_PORT, secure=settings.DEVCLUSTER_SECURE)
    client = devcluster_secure.client_properties(cluster.root) if cluster.secure else ""
    return ConnectWorker(settings.DEVCLUSTER_CONNECT_DIR, cluster.bootstrap_servers(), settings.DEVCLUSTER_CONNECT_PORT,
                         log_level=settings.DEVCLUSTER_LOG_LEVEL, client_properties=client, jvm_opts=settings.DEVCLUSTER_JVM_OPTS)


class Command(BaseCommand):
    help = "Run the local Kafka Connect worker: up (with --demo: the demo file pipeline), down, status, kill."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["up", "down", "status", "kill"])
        parser.add_argument("--foreground", action="store_true", help="with up: stay running, stop the worker on exit")
        parser.add_argument("--demo", action="store_true", help="with up: create the demo file source and sink connectors")
        parser.add_argument("--mirror", action="store_true",
                            help="with up: MirrorMaker 2's connectors for the flow local -> backup (devcluster up --backup)")
        parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the cluster and the worker")

    def handle(self, *args: Any, **opts: Any) -> None:
        worker = local_worker()
        action = opts["action"]
        try:
            if action == "up":
                worker.replication = self._wait_for_cluster(opts["timeout"])
                worker.start()
                worker.wait_ready(opts["timeout"])
                if opts["demo"]:
                    worker.install_demo()
                    self.stdout.write(f"demo pipeline: {worker.demo_source_file()} -> topic -> {worker.demo_sink_file()}")
                if opts["mirror"]:
                    self._install_mirror(worker, opts["timeout"])
                self.stdout.write(f"Kafka Connect worker: {worker.url}")
                if opts["foreground"]:
                    self._stay(worker)
            elif action == "down":
                worker.stop()
                self.stdout.write("Connect worker stopped")
            elif action == "status":
                st = worker.status()
                state = ("ready" if st.ready else "starting") + f" (pid {st.pid})" if st.running else "stopped"
                self.stdout.write(f"Connect worker {st.url} {state}")
            elif action == "kill":
                self.stdout.write("Connect worker " + ("killed" if worker.kill() else "was not running"))
        except DevClusterError as exc:
            raise CommandError(str(exc)) from exc

    def _install_mirror(self, worker: ConnectWorker, timeout: float) -> None:
        """The demo flow local -> backup, once the backup cluster answers (`make run` starts it beside)."""
        if settings.DEVCLUSTER_SECURE:
            # MM2's own clients would need the secure cluster's login in every connector's config: left out of the demo.
            self.stdout.write("MirrorMaker 2 demo skipped: the local cluster runs in secure mode")
            return
        backup = DevCluster(settings.DEVCLUSTER_BACKUP_DIR, settings.DEVCLUSTER_BACKUP_PORT, voters=1).bootstrap_servers()
        probe = gateway.for_bootstrap(backup, timeout=3.0)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    probe.metadata()
                    break
                except GatewayError:
                    if time.monotonic() > deadline:
                        raise CommandError(f"the backup cluster did not answer at {backup}: start it with 'devcluster up --backup'") from None
                    time.sleep(1.0)
        finally:
            probe.close()
        configs = mirror_configs("local", worker.bootstrap_servers, "backup", backup, topics=r"demo\.(orders|invoices)",
                                 groups=r"demo-(healthy|lagging)")
        install_mirror(worker.url, configs)
        self.stdout.write(f"MirrorMaker 2: local -> backup ({', '.join(configs)})")

    def _wait_for_cluster(self, timeout: float) -> int:
        """Wait for the local cluster's brokers (`make run` starts both at once); the replication factor
        of the worker's topics: as many brokers as answer, up to 3."""
        cluster = DevCluster(settings.DEVCLUSTER_DIR, settings.DEVCLUSTER_BASE_PORT, secure=settings.DEVCLUSTER_SECURE)
        probe = gateway.for_bootstrap(cluster.bootstrap_servers(list(VOTERS)), timeout=3.0,
                                      **(devcluster_secure.console_connection(cluster.root) if cluster.secure else {}))
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                try:
                    brokers = len(probe.metadata().brokers)
                except GatewayError:
                    brokers = 0
                if brokers >= len(VOTERS):
                    return min(3, brokers)
                time.sleep(1.0)
        finally:
            probe.close()
        raise CommandError(f"the local cluster did not answer within {timeout:.0f} s: start it with 'devcluster up'")

    def _stay(self, worker: ConnectWorker) -> None:
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not stopping:
            time.sleep(0.5)
        self.stdout.write("stopping the Connect worker")
        worker.stop()
