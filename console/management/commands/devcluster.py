"""`manage.py devcluster up|down|status|kill N|start N|add`: the local KRaft cluster; with --backup the
one-node cluster "backup" (DEVCLUSTER_BACKUP_DIR, DEVCLUSTER_BACKUP_PORT) that MirrorMaker 2 replicates to."""

from __future__ import annotations

import signal
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import devcluster_secure, gateway
from console.devcluster import DevCluster, DevClusterError
from console.gateway.errors import GatewayError


class Command(BaseCommand):
    help = "Run the local 3-node KRaft cluster: up, down, status, kill N, start N, add."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["up", "down", "status", "kill", "start", "add"])
        parser.add_argument("node", nargs="?", type=int, help="node id, for kill and start")
        parser.add_argument("--foreground", action="store_true", help="with up: stay running, stop the nodes on exit")
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for brokers to register")
        parser.add_argument("--heap", default="", help="maximum Java heap of each node (default 512m, --backup 256m)")
        parser.add_argument("--now", action="store_true",
                            help="with down: SIGKILL every node instead of a clean shutdown (a throwaway cluster's data)")
        parser.add_argument("--backup", action="store_true",
                            help="the one-node cluster 'backup', MirrorMaker 2's target, instead of the local cluster")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["backup"]:
            # Plaintext always: it is a replication target for demos and tests, not a security example.
            cluster = DevCluster(settings.DEVCLUSTER_BACKUP_DIR, settings.DEVCLUSTER_BACKUP_PORT, heap=opts["heap"] or "256m",
                                 log_level=settings.DEVCLUSTER_LOG_LEVEL, voters=1, jvm_opts=settings.DEVCLUSTER_JVM_OPTS)
        else:
            cluster = DevCluster(settings.DEVCLUSTER_DIR, settings.DEVCLUSTER_BASE_PORT, heap=opts["heap"] or "512m",
                                 log_level=settings.DEVCLUSTER_LOG_LEVEL, secure=settings.DEVCLUSTER_SECURE,
                                 client_config=settings.DEVCLUSTER_CLIENT_CONFIG, jvm_opts=settings.DEVCLUSTER_JVM_OPTS)
        action = opts["action"]
        node = opts["node"]
        try:
            if action in {"kill", "start"}:
                if node is None or node < 1:
                    raise CommandError(f"'{action}' needs a node id, e.g. 'devcluster {action} 2'")
                if node not in cluster.nodes():
                    raise CommandError(f"node {node} does not exist; nodes: {cluster.nodes()}")
            if action == "up":
                cluster.up()
                self._wait(cluster, cluster.nodes(), opts["timeout"])
                self.stdout.write(f"bootstrap servers: {cluster.bootstrap_servers()}")
                if cluster.secure:
                    self.stdout.write(f"secure (SASL_SSL, SCRAM-SHA-512 or PLAIN; ACLs): Kafka's tools log in as the "
                                      f"console with --command-config {cluster.client_config}")
                if opts["foreground"]:
                    self._stay(cluster)
            elif action == "down":
                cluster.down(now=opts["now"])
                self.stdout.write(("backup" if opts["backup"] else "local") + " cluster stopped")
            elif action == "status":
                for st in cluster.status():
                    state = f"running (pid {st.pid})" if st.running else "stopped"
                    self.stdout.write(f"node {st.node_id} [{st.roles}] 127.0.0.1:{st.broker_port} {state}")
            elif action == "kill":
                killed = cluster.kill(node)
                self.stdout.write(f"node {node} {'killed' if killed else 'was not running'}")
            elif action == "start":
                cluster.start(node)
                self._wait(cluster, [node], opts["timeout"])
                self.stdout.write(f"node {node} started")
            elif action == "add":
                new = cluster.add_node()
                self._wait(cluster, [new], opts["timeout"])
                self.stdout.write(f"node {new} added (broker only) at 127.0.0.1:{cluster.broker_port(new)}")
        except DevClusterError as exc:
            raise CommandError(str(exc)) from exc

    def _wait(self, cluster: DevCluster, nodes: list[int], timeout: float) -> None:
        """Wait until every given node is a registered, unfenced broker."""
        probe = gateway.for_bootstrap(cluster.bootstrap_servers(sorted(set(cluster.voters) | set(nodes))), timeout=3.0,
                                      **(devcluster_secure.console_connection(cluster.root) if cluster.secure else {}))
        deadline = time.monotonic() + timeout
        live: set[int] = set()
        try:
            while time.monotonic() < deadline:
                try:
                    live = {b.id for b in probe.metadata().brokers}
                except GatewayError:
                    live = set()
                if set(nodes) <= live:
                    return
                dead = [st.node_id for st in cluster.status() if st.node_id in nodes and not st.running]
                if dead:
                    raise CommandError(f"node(s) {dead} exited; see {cluster.root}/node<N>/server.log")
                time.sleep(0.5)
        finally:
            probe.close()
        raise CommandError(f"brokers {sorted(set(nodes) - live)} did not register within {timeout:.0f} s")

    def _stay(self, cluster: DevCluster) -> None:
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not stopping:
            time.sleep(0.5)
        self.stdout.write("stopping the cluster")
        cluster.down()
