"""A local Apache Kafka cluster in KRaft mode, run from the jars the pom in kafka/ pinned.

Nodes 1-3 are combined broker+controller nodes (the quorum voters); nodes 4 and up are
broker-only nodes that join as quorum observers. Node N listens on base_port + 2(N-1) for
clients and the next port for the controller protocol, has rack r1..r3, and keeps its data,
logs and pid file under <root>/node<N>/. A small cluster (voters=1: the MirrorMaker 2 target "backup") has
one combined node, and its internal topics one replica each. In secure mode (console/devcluster_secure.py) the client
ports take SASL_SSL instead of PLAINTEXT; a root remembers its mode and is never started in the other.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from console import devcluster_secure

REPO = Path(__file__).resolve().parent.parent
KAFKA_DIR = REPO / "kafka"
VOTERS = (1, 2, 3)


class DevClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class NodeStatus:
    node_id: int
    pid: int | None
    running: bool
    broker_port: int
    controller_port: int | None
    roles: str


class DevCluster:
    def __init__(self, root: Path, base_port: int, heap: str = "512m", log_level: str = "WARN",
                 secure: bool = False, client_config: Path | None = None, voters: int = len(VOTERS),
                 jvm_opts: Sequence[str] = ()) -> None:
        self.root = root
        self.voters = tuple(range(1, voters + 1))
        self.base_port = base_port
        self.heap = heap
        self.log_level = log_level
        self.secure = secure
        self.client_config = client_config  # secure mode: where Kafka's tools find the console's login
        self.jvm_opts = list(jvm_opts)

    # Layout -------------------------------------------------------------------------------
    def broker_port(self, node: int) -> int:
        return self.base_port + 2 * (node - 1)

    def controller_port(self, node: int) -> int:
        return self.base_port + 2 * (node - 1) + 1

    def node_dir(self, node: int) -> Path:
        return self.root / f"node{node}"

    def nodes(self) -> list[int]:
        found = {int(p.name[4:]) for p in self.root.glob("node*") if p.name[4:].isdigit()}
        return sorted(found | set(self.voters))

    def bootstrap_servers(self, nodes: list[int] | None = None) -> str:
        return ",".join(f"127.0.0.1:{self.broker_port(n)}" for n in (nodes or list(self.voters)))

    def cluster_id(self) -> str:
        path = self.root / "cluster_id"
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            raw = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            path.write_text(raw)
        return path.read_text().strip()

    def properties(self, node: int) -> str:
        voters = ",".join(f"{v}@127.0.0.1:{self.controller_port(v)}" for v in self.voters)
        combined = node in self.voters
        replicas, min_isr = str(min(3, len(self.voters))), str(min(2, len(self.voters)))
        listeners = f"PLAINTEXT://127.0.0.1:{self.broker_port(node)}"
        if combined:
            listeners += f",CONTROLLER://127.0.0.1:{self.controller_port(node)}"
        lines = {
            "process.roles": "broker,controller" if combined else "broker",
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port(node)}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "broker.rack": f"r{(node - 1) % 3 + 1}",
            "log.dirs": str(self.node_dir(node) / "data"),
            "auto.create.topics.enable": "false",
            "num.partitions": "1",
            "default.replication.factor": replicas,
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": "10",
            # Ten partitions each for the coordinators' internal topics, as for the offsets topic: Kafka's 50
            # each would put 150 more replicas on three small local nodes the first time a transactional
            # producer or a share group comes.
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            "group.initial.rebalance.delay.ms": "0",
            # Sized for a 2-core machine running several nodes.
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.replica.fetchers": "1",
            "log.cleaner.threads": "1",
            "num.recovery.threads.per.data.dir": "1",
            # An idle local cluster mostly wakes itself: the controller's no-op record every 500 ms
            # (written and applied on every node) and followers' fetches parked 500 ms. Fewer wake-ups
            # cut its CPU by a third; data still reaches followers at once (a parked fetch returns on it).
            "metadata.max.idle.interval.ms": "10000",
            "replica.fetch.wait.max.ms": "3000",
            # Fence a silent broker after 6 s (Kafka's default is 9 s) so faults show sooner.
            "broker.heartbeat.interval.ms": "1000",
            "broker.session.timeout.ms": "6000",
            "log.retention.hours": "24",
            "log.segment.bytes": str(64 * 1024 * 1024),
        }
        if self.secure:
            lines.update(devcluster_secure.node_properties(
                self.root, node, self.broker_port(node), self.controller_port(node) if combined else None))
        else:
            lines.update(self.tiered_storage_properties(replicas, min_isr))
        return "".join(f"{k}={v}\n" for k, v in lines.items())

    def tiered_storage_dir(self) -> Path:
        """The remote tier every node shares, as brokers share an object store: <root>/tiered-storage/
        kafka-tiered-storage/<topic>-<partition>-<topic id>/<start offset>-<segment id>.<kind>."""
        return self.root / "tiered-storage"

    def tiered_storage_properties(self, replicas: str, min_isr: str) -> dict[str, str]:
        """Remote storage (KIP-405) with Kafka's own local-file RemoteStorageManager from the kafka-storage
        test jar, for topics created with remote.storage.enable=true; other topics are untouched. Plaintext
        only: the metadata manager's clients would need the console's SASL login in secure mode."""
        return {
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
            "rsm.config.dir": str(self.tiered_storage_dir()),
            "remote.log.metadata.manager.listener.name": "PLAINTEXT",
            # A small metadata topic (Kafka's default is 50 partitions) and few idle threads.
            "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
            "rlmm.config.remote.log.metadata.topic.replication.factor": replicas,
            "rlmm.config.remote.log.metadata.topic.min.isr": min_isr,
            # A node started while the others are down waits for the metadata topic instead of exiting
            # after Kafka's 2 minutes (the fault tests keep nodes down longer).
            "rlmm.config.remote.log.metadata.initialization.retry.max.timeout.ms": str(3600 * 1000),
            "remote.log.manager.copier.thread.pool.size": "1",
            "remote.log.manager.expiration.thread.pool.size": "1",
            "remote.log.manager.follower.thread.pool.size": "1",
            "remote.log.reader.threads": "1",
            # Tier a rolled segment within seconds (Kafka's default: 30 s) and drop its local copy soon after
            # (local retention is checked with the rest, Kafka's default: every 5 minutes).
            "remote.log.manager.task.interval.ms": "2000",
            "log.retention.check.interval.ms": "5000",
        }

    # Modes ---------------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return "secure" if self.secure else "plaintext"

    def _check_mode(self) -> None:
        """A root is started in the mode it was formatted in, or not at all: brokers formatted without
        SCRAM credentials would refuse every login, and a plaintext root must never become open by surprise."""
        path = self.root / "mode"
        formatted = any((self.node_dir(n) / "data" / "meta.properties").exists() for n in self.nodes())
        if path.exists():
            found = path.read_text().strip()
        elif formatted:
            found = "plaintext"  # formatted before roots remembered their mode
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            path.write_text(self.mode + "\n")
            return
        if found != self.mode:
            raise DevClusterError(
                f"the cluster in {self.root} was set up {found}, not {self.mode}: give this mode its own directory "
                f"(DEVCLUSTER_DIR) or remove that one ('make clean' removes var/)")

    def prepare_secure(self, node: int | None = None) -> None:
        """Secure mode's files: passwords, the CA and a node's key pair, the tools' client config."""
        devcluster_secure.secrets(self.root)
        for n in [node] if node is not None else list(self.voters):
            devcluster_secure.make_tls(self.root, n)
        if self.client_config is not None:
            devcluster_secure.write_client_properties(self.root, self.client_config)

    # Processes ------------------------------------------------------------------------------
    def _pid(self, node: int) -> int | None:
        path = self.node_dir(node) / "pid"
        try:
            pid = int(path.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        if b"kafka.Kafka" not in cmdline or str(self.node_dir(node)).encode() not in cmdline:
            return None
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            return None
        return None if state == "Z" else pid

    def status(self) -> list[NodeStatus]:
        result = []
        for node in self.nodes():
            pid = self._pid(node)
            result.append(
                NodeStatus(
                    node_id=node,
                    pid=pid,
                    running=pid is not None,
                    broker_port=self.broker_port(node),
                    controller_port=self.controller_port(node) if node in self.voters else None,
                    roles="broker,controller" if node in self.voters else "broker",
                )
            )
        return result

    def _format(self, node: int) -> None:
        ndir = self.node_dir(node)
        if (ndir / "data" / "meta.properties").exists():
            return
        (ndir / "data").mkdir(parents=True, exist_ok=True)
        cmd = [str(KAFKA_DIR / "bin" / "kafka-storage"), "format", f"--cluster-id={self.cluster_id()}", "-c", str(ndir / "server.properties")]
        if self.secure:
            cmd += devcluster_secure.format_arguments(self.root)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise DevClusterError(f"formatting node {node} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self, node: int) -> int:
        if not (KAFKA_DIR / "lib").is_dir():
            raise DevClusterError("kafka/lib is missing: run 'make kafka-jars' (or 'make run') first")
        self._check_mode()  # first: a node running in the other mode is no answer either
        pid = self._pid(node)
        if pid is not None:
            return pid
        ndir = self.node_dir(node)
        ndir.mkdir(parents=True, exist_ok=True)
        if self.secure:
            self.prepare_secure(node)
        (ndir / "server.properties").write_text(self.properties(node))
        self._format(node)
        log = open(ndir / "server.log", "ab")  # noqa: SIM115 - handed to the child process
        cmd = [
            "java",
            f"-Xmx{self.heap}",
            "-Xms128m",
            "-XX:+UseSerialGC",
            *self.jvm_opts,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2.properties'}",
            f"-Dkafka.root.level={self.log_level}",
            "-cp",
            str(KAFKA_DIR / "lib" / "*"),
            "kafka.Kafka",
            str(ndir / "server.properties"),
        ]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        (ndir / "pid").write_text(str(proc.pid))
        return proc.pid

    def kill(self, node: int) -> bool:
        """SIGKILL one node, as a crash would."""
        pid = self._pid(node)
        if pid is None:
            return False
        os.kill(pid, signal.SIGKILL)
        self._wait_gone(pid, 10)
        return True

    def stop(self, node: int, timeout: float = 30) -> None:
        pid = self._pid(node)
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        if not self._wait_gone(pid, timeout):
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid, 10)

    def _wait_gone(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
            if not Path(f"/proc/{pid}").exists():
                return True
            try:
                state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
                if state == "Z":
                    return True
            except (OSError, IndexError):
                return True
            time.sleep(0.1)
        return False

    def up(self, nodes: list[int] | None = None) -> None:
        for node in nodes or self.nodes():
            self.start(node)

    def down(self, now: bool = False) -> None:
        """Stop every node: cleanly (SIGTERM, up to 30 s each), or with `now` at once (SIGKILL), for a
        cluster whose data is thrown away next, as the tests' are."""
        if now:
            for node in self.nodes():
                self.kill(node)
            return
        # Brokers first, then the controllers, so shutdown does not wait on a lost quorum.
        for node in sorted(self.nodes(), reverse=True):
            pid = self._pid(node)
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
        for node in self.nodes():
            self.stop(node, timeout=30)

    def add_node(self) -> int:
        node = max(self.nodes()) + 1
        self.start(node)
        return node
