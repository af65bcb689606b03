"""Scale simulator (issue 11): the watcher against synthetic clusters far larger than this machine holds.

`.venv/bin/python -m bench.simulate --partitions 300000 --groups 50000 --change-rate 0.01 --seconds 60`
builds a cluster model (brokers, topics of `--partitions-per-topic` partitions with replicas and ISR,
end offsets, groups each reading one topic) and a gateway that answers for it through the same
methods the real gateway offers (metadata, quorum, offsets, log dirs, groups, configs), then runs the
real ClusterWatcher on it, as `manage.py watch` does: the metadata cycle in one thread, the sampling
(offsets, groups, lag evaluation) in a process of its own, Redis and the database for what they
publish. The model changes as time goes by: each second `--change-rate` of the partitions change (a
leader moves, an ISR shrinks or grows back; a tenth of them every 0.1 s) and take writes; their groups commit. `--failure-rate` makes that
share of the gateway's calls fail (an error, or metadata missing a random share of the topics, as a
broker answering from a stale cache can). `--redis-down-after S` stops the bench's Redis S seconds
into the run, for what the watcher holds while it is down (its RSS, below). `--outage-after S` makes
the whole cluster stop answering S seconds into the run, for `--outage-seconds` (every call of the
watcher and its sampling process fails, as when no broker is reachable; the model makes no change
meanwhile): what the watcher's cycles cost and hold while it keeps the last known state, and how
soon the first snapshot after it is published. `--broker-down-after S` takes one broker
(`--broker-id`) out of the cluster S seconds into the run for `--broker-down-seconds` (its
partitions' leadership moves to another in-sync replica and it leaves every ISR, as a controlled
shutdown does; back, it rejoins the ISRs as the changes go on): what the cycles that see it go and
come back cost.

The model runs in a process of its own (as a cluster does: the watcher only reads its answers) and
the watcher's sampling passes in their own process, as `manage.py watch` runs them
(`--in-process`: in a thread of the watcher's process instead).

It ends by printing one JSON line: cycle_p50_seconds, cycle_max_seconds, cpu_fraction (CPU-seconds of
the watcher per wall second: its three threads (cycle, sampling, events) and its sampling process; the model's process is not
counted), max_rss_mb (the watcher's process and its sampling process, their peaks added;
rss_together_max_mb the most both held at once, read together every 50 ms over the run, and
rss_together_warmup_max_mb over the warm-up before it; rss_at_end_mb what both held at the end),
push_p50_seconds / push_max_seconds (from a leader move in the model to the published snapshot that
shows it), spurious_events (topic created/deleted and broker events the
model never made), cycles, and what else was seen. `--append` adds the figures to docs/benchmarks.md.

Needs Redis (started here on the test port) and the test database (migrated here); no Kafka.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Generator, Iterable
from datetime import UTC, datetime
from typing import Any

from bench.machine import reference_seconds
from tests.support import REDIS_PORT, ROOT, running_redis

# Events the model never makes: any of these is spurious.
SPURIOUS_KINDS = {"topic_created", "topic_deleted", "broker_down", "broker_up", "broker_added"}


class Model:
    """A synthetic cluster that changes as time goes by; thread-safe. Its answers are raw (tuples and
    lists); a gateway (SimGateway here, RemoteModelGateway from another process) turns them into
    what the real gateway returns."""

    def __init__(self, partitions: int, groups: int, brokers: int, per_topic: int, seed: int = 1) -> None:
        from console.gateway.types import Broker

        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.brokers = tuple(Broker(id=b, host=f"broker-{b}.sim", port=9092, rack=f"rack-{b % 3}") for b in range(1, brokers + 1))
        ids = [b.id for b in self.brokers]
        n_topics = max(1, partitions // per_topic)
        self.topics: dict[str, list[list[Any]]] = {}  # name -> [leader, replicas, isr, start, end] per partition
        for t in range(n_topics):
            name = f"sim.topic-{t:06d}"
            parts = []
            for p in range(per_topic):
                first = (t * 7 + p) % len(ids)
                replicas = tuple(ids[(first + k) % len(ids)] for k in range(min(3, len(ids))))
                parts.append([replicas[0], replicas, replicas, 0, self.rng.randint(0, 10**6)])
            self.topics[name] = parts
        self.names = sorted(self.topics)
        self.groups: dict[str, tuple[str, dict[int, int], int]] = {}  # group -> (topic, committed, members)
        for g in range(groups):
            topic = self.names[g % len(self.names)]
            # Caught up: an idle cluster is a steady one (the changes make the groups fall behind and catch up).
            committed = {p: part[4] for p, part in enumerate(self.topics[topic])}
            self.groups[f"sim.group-{g:06d}"] = (topic, committed, 1 + g % 3)
        self.group_ids = sorted(self.groups)  # (the groups stay the same ones)
        self.version = 0  # bumped by each step; a topic's metadata changed at the version noted here
        self.topic_versions: dict[str, int] = dict.fromkeys(self.topics, 0)
        self.moves: list[tuple[float, str, int, int]] = []  # (when, topic, partition, new leader)
        self.down: set[int] = set()  # (brokers taken out: broker_down)
        # brokers asked for sizes -> (topic, partition, its replicas there, its entry) of each partition there
        self._on_brokers: dict[tuple[int, ...], list[tuple[str, int, tuple[int, ...], list[Any]]]] = {}
        self.changes = 0

    def step(self, change_rate: float, seconds: float, count: int | None = None) -> None:
        """Change `change_rate` of the partitions per second, for `seconds` (or `count` partitions)."""
        if count is None:
            count = int(self.partition_count() * change_rate * seconds)
        now = time.time()
        with self.lock:
            self.version += 1
            for _ in range(count):
                name = self.names[self.rng.randrange(len(self.names))]
                parts = self.topics[name]
                p = self.rng.randrange(len(parts))
                leader, replicas, isr, _start, _end = parts[p]
                roll = self.rng.random()
                if roll < 0.4 and len(isr) > 1:
                    new = self.rng.choice([r for r in isr if r != leader])
                    parts[p][0] = new
                    self.moves.append((now, name, p, new))
                elif roll < 0.7 and len(isr) > 1:
                    parts[p][2] = tuple(r for r in isr if r != self.rng.choice([r for r in isr if r != leader]))
                else:
                    parts[p][2] = tuple(r for r in replicas if r not in self.down) if self.down else replicas  # back in sync
                parts[p][4] += self.rng.randint(1, 1000)
                self.topic_versions[name] = self.version
                self.changes += 1
            # The groups on the changed topics commit what they have read.
            for gid in self.rng.sample(self.group_ids, min(len(self.groups), max(1, count // 10))):
                topic, committed, members = self.groups[gid]
                ends = self.topics[topic]
                self.groups[gid] = (topic, {p: max(c, ends[p][4] - self.rng.randint(0, 100)) for p, c in committed.items()}, members)

    def broker_down(self, broker: int) -> None:
        """`broker` leaves the cluster as a controlled shutdown takes it out: each partition it leads
        moves to another in-sync replica, and it leaves every ISR."""
        now = time.time()
        with self.lock:
            self.version += 1
            self.down.add(broker)
            for name, parts in self.topics.items():
                touched = False
                for p, v in enumerate(parts):
                    if broker in v[1]:
                        isr = tuple(r for r in v[2] if r != broker)
                        if v[0] == broker and isr:
                            v[0] = isr[0]
                            self.moves.append((now, name, p, isr[0]))
                        v[2] = isr or v[2]
                        touched = True
                if touched:
                    self.topic_versions[name] = self.version

    def broker_up(self, broker: int) -> None:
        """`broker` is back (its replicas rejoin the ISRs as the changes bring them back in sync)."""
        with self.lock:
            self.version += 1
            self.down.discard(broker)

    def live_brokers(self) -> tuple[Any, ...]:
        with self.lock:
            return tuple(b for b in self.brokers if b.id not in self.down)

    # Raw answers ---------------------------------------------------------------------------------
    def metadata_since(self, version: int) -> tuple[int, list[str], dict[str, list[tuple[int, Any, Any]]]]:
        """(the model's version, every topic's name, the layout of the topics changed after `version`)."""
        with self.lock:
            changed = {name: [(v[0], v[1], v[2]) for v in self.topics[name]]
                       for name in self.names if self.topic_versions.get(name, 0) > version}
            return self.version, list(self.names), changed

    def exists(self, names: list[str]) -> dict[str, bool]:
        with self.lock:
            return {n: n in self.topics for n in names}

    def offsets(self, which: str) -> dict[str, list[int]]:
        index = 3 if which == "earliest" else 4
        with self.lock:
            return {t: [v[index] for v in parts] for t, parts in self.topics.items()}

    def sizes(self, brokers: list[int]) -> list[tuple[str, int, tuple[int, ...], int]]:
        """(topic, partition, its replicas on `brokers`, size) of each partition with one there: what
        those brokers' log dirs report."""
        key = tuple(sorted(set(brokers)))
        with self.lock:
            # (which partitions have replicas there never changes in the model: found once for each
            # set of brokers asked, not by a walk of every partition at each of a pass's ten asks)
            found = self._on_brokers.get(key)
            if found is None:
                wanted = set(key)
                found = self._on_brokers[key] = [
                    (t, p, on, v) for t, parts in self.topics.items() for p, v in enumerate(parts)
                    if (on := tuple([r for r in v[1] if r in wanted]))]
            return [(t, p, on, v[4] * 100) for t, p, on, v in found]

    def group_list(self) -> list[tuple[str, str, int, int]]:
        with self.lock:
            return [(gid, topic, len(self.topics[topic]), members) for gid, (topic, _c, members) in self.groups.items()]

    def group_commits(self, group_ids: list[str]) -> dict[str, tuple[str, dict[int, int]]]:
        with self.lock:
            return {gid: (self.groups[gid][0], self.groups[gid][1]) for gid in group_ids if gid in self.groups}

    def alive(self) -> bool:
        """(what the calls that read nothing of the model ask: whether the cluster answers at all)"""
        return True

    def moves_since(self, index: int) -> list[tuple[float, str, int, int]]:
        with self.lock:
            return self.moves[index:]

    def partition_count(self) -> int:
        return sum(len(p) for p in self.topics.values())

    def counts(self) -> dict[str, int]:
        with self.lock:
            return {"partitions": self.partition_count(), "groups": len(self.groups),
                    "brokers": len(self.brokers), "changes": self.changes, "moves": len(self.moves)}


class SimGateway:
    """Answers the watcher's questions for a Model, as console.gateway.client.ClusterGateway does
    (the same Topic object for a topic whose metadata did not change)."""

    def __init__(self, model: Model | None, failure_rate: float, seed: int = 2) -> None:
        self.model = model
        self.failure_rate = failure_rate
        self.rng = random.Random(seed)
        self.kafka_python_requests: dict[str, int] = {}
        self.failures: dict[str, int] = {}
        self._version = -1
        self._topics: dict[str, Any] = {}
        self._brokers: tuple[Any, ...] = ()

    def ask(self, name: str, *args: Any) -> Any:
        """One raw answer of the model."""
        assert self.model is not None
        if name == "brokers":
            return self.model.brokers
        return getattr(self.model, name)(*args)

    def _maybe_fail(self, what: str) -> None:
        from console.gateway.errors import ClusterUnavailable

        if self.failure_rate and self.rng.random() < self.failure_rate:
            self.failures[what] = self.failures.get(what, 0) + 1
            raise ClusterUnavailable(f"simulated failure: could not {what}")

    def _brokers_known(self) -> tuple[Any, ...]:
        if not self._brokers:
            self._brokers = self.ask("brokers")
        return self._brokers

    def metadata(self) -> Any:
        from console.gateway.types import ClusterMetadata, PartitionTable, Topic

        self._maybe_fail("read the cluster metadata")
        version, names, changed = self.ask("metadata_since", self._version)
        self._version = version
        for name, layout in changed.items():
            # (a changed topic as the real gateway makes it: its partitions' columns)
            self._topics[name] = Topic(name=name, internal=False, partitions=PartitionTable.of(
                name, ((p, v[0], v[1], v[2], None) for p, v in enumerate(layout))))
        if len(self._topics) != len(names):
            self._topics = {n: self._topics[n] for n in names if n in self._topics}
        if self.failure_rate and self.rng.random() < self.failure_rate:
            # A broker answering from a stale cache: some topics missing from an answer that says nothing of it.
            self.failures["partial metadata"] = self.failures.get("partial metadata", 0) + 1
            keep = self.rng.random()
            names = [n for n in names if self.rng.random() < keep]
        topics = self._topics
        return ClusterMetadata(cluster_id="sim-cluster", brokers=self.ask("live_brokers"), topics=tuple(topics[n] for n in names))

    def topics_exist(self, names: Iterable[str]) -> dict[str, bool]:
        self._maybe_fail("describe topics")
        return dict(self.ask("exists", list(names)))

    def quorum(self) -> Any:
        from console.gateway.types import Quorum, QuorumReplica

        self.ask("alive")
        now = int(time.time() * 1000)
        brokers = self._brokers_known()
        voters = tuple(QuorumReplica(b.id, 1000, now, now) for b in brokers[:3])
        return Quorum(leader_id=brokers[0].id, leader_epoch=1, high_watermark=1000, voters=voters, observers=())

    def broker_racks(self) -> dict[int, str | None]:
        self.ask("alive")
        return {b.id: b.rack for b in self._brokers_known()}

    def probe_brokers(self, addresses: Any) -> dict[tuple[str, int], str]:
        """Every listed broker's port accepts (the model has no broker dead but not yet fenced)."""
        return dict.fromkeys(addresses, "accepted")

    def topic_configs(self, topics: Iterable[str], keys: frozenset[str] | None = None) -> dict[str, dict[str, str]]:
        self.ask("alive")
        return {t: {"min.insync.replicas": "2"} for t in topics}

    def list_offsets(self, partitions: Iterable[tuple[str, int]], which: str) -> dict[tuple[str, int], int]:
        self._maybe_fail("list offsets")
        table = self.ask("offsets", which)
        # (keyed by the objects asked for, as ClusterGateway.list_offsets answers)
        return {tp: table[tp[0]][tp[1]] for tp in partitions if tp[0] in table and tp[1] < len(table[tp[0]])}

    def log_dir_sizes(self, brokers: list[int]) -> dict[tuple[str, int], dict[int, int]]:
        """The replicas on `brokers` (as DescribeLogDirs answers: each broker its own)."""
        self._maybe_fail("describe log dirs")
        return {(t, p): dict.fromkeys(on, size) for t, p, on, size in self.ask("sizes", sorted(set(brokers)))}

    def consumer_groups(self, partition: Any = None) -> list[Any]:
        return [g for chunk in self.consumer_group_chunks(partition) for g in chunk]

    def consumer_group_chunks(self, partition: Any = None) -> Generator[list[Any], None, None]:
        """As ClusterGateway's: every group listed at once, then described DESCRIBE_CHUNK at a time."""
        from console.gateway.groups import DESCRIBE_CHUNK
        from console.gateway.types import ConsumerGroup, GroupMember

        self._maybe_fail("list consumer groups")
        named = partition if partition is not None else (lambda tp: tp)
        brokers = len(self._brokers_known())
        listed = self.ask("group_list")
        for start in range(0, len(listed), DESCRIBE_CHUNK):
            out = []
            for gid, topic, n_parts, members in listed[start:start + DESCRIBE_CHUNK]:
                parts = list(range(n_parts))
                ms = tuple(GroupMember(f"{gid}-m{i}", f"client-{i}", "/10.0.0.1", tuple([named((topic, p)) for p in parts[i::members]]))
                           for i in range(members))
                out.append(ConsumerGroup(group_id=gid, state="Stable", protocol_type="consumer", group_type="classic",
                                         assignor="range", members=ms, coordinator=1 + hash(gid) % brokers))
            yield out

    def group_offsets(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        return {gid: {(topic, p): o for p, o in committed.items()} for gid, (topic, committed) in self.ask("group_commits", group_ids).items()}

    def share_group_offsets(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], tuple[int, int]]]:
        return {}


# The model in a process of its own -------------------------------------------------------------
# At 300,000 partitions the model's own work (changing, and answering ~2 s of CPU per sampling pass)
# would take the watcher's interpreter lock; in its own process it costs the watcher what a real
# cluster's answers cost: reading them. The watcher (and its sampling process) reach it through
# RemoteModelGateway.

AUTHKEY = b"bench.simulate"
# What the model's server answers a cluster's question with during an outage (`--outage-after`),
# and the questions that are the bench's own (answered anyway).
DOWN = "bench.simulate: the cluster does not answer"
BENCH_ASKS = frozenset({"start_changing", "outage", "moves_since", "counts", "step", "broker_down", "broker_up"})


def no_delay(conn: Any) -> Any:
    """A connection to or from the model with Nagle's algorithm off: multiprocessing sends an
    answer over 16 KB as two writes (its length, then its body), and the second waited for the
    first's delayed ACK, 40 ms, on every metadata answer (a steady cycle at 30,000 partitions took
    55 ms, 50 of them that wait: a cost of the model's socket, not the watcher's)."""
    with socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM) as sock:  # (a second handle on it)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


class RemoteModelGateway(SimGateway):
    """SimGateway answering from a ModelServer in another process."""

    def __init__(self, address: Any, failure_rate: float, seed: int = 2) -> None:
        from multiprocessing.connection import Client

        super().__init__(None, failure_rate, seed)
        self._conn = no_delay(Client(address, authkey=AUTHKEY))
        self._lock = threading.Lock()

    def ask(self, name: str, *args: Any) -> Any:
        with self._lock:
            self._conn.send((name, args))
            answer = self._conn.recv()
        if isinstance(answer, str) and answer == DOWN:
            from console.gateway.errors import ClusterUnavailable

            self.failures["outage"] = self.failures.get("outage", 0) + 1
            raise ClusterUnavailable("simulated outage: no broker answers")
        return answer


class RemoteModelFactory:
    """Picklable: makes a RemoteModelGateway in whichever process calls it (the sampling process)."""

    def __init__(self, address: Any, failure_rate: float, seed: int) -> None:
        self.address, self.failure_rate, self.seed = address, failure_rate, seed

    def __call__(self) -> RemoteModelGateway:
        return RemoteModelGateway(self.address, self.failure_rate, self.seed)


CHANGE_TICK = 0.1


def _serve_model(params: dict[str, Any], reply: Any) -> None:
    from multiprocessing.connection import Listener

    from console.lifecycle import die_with_parent

    die_with_parent()
    model = Model(params["partitions"], params["groups"], params["brokers"], params["per_topic"])
    listener = Listener(("127.0.0.1", 0), authkey=AUTHKEY)
    changing = threading.Event()
    down = threading.Event()  # (an outage: every question of the cluster's fails, nothing changes)

    # The changes come in a step every CHANGE_TICK seconds, not all of a second's at once: a
    # watcher polling every second saw them at a phase that drifted slowly over a run, and the
    # time from a change to the page with it (its push) went up and down with that phase.
    def change() -> None:
        owed = 0.0  # (partitions to change, carried over: low rates change fewer than one a tick)
        per_tick = model.partition_count() * params["change_rate"] * CHANGE_TICK
        while True:
            if changing.is_set() and not down.is_set():
                owed += per_tick
                count = int(owed)
                owed -= count
                if count:
                    model.step(params["change_rate"], CHANGE_TICK, count)
            time.sleep(CHANGE_TICK)

    def serve(conn: Any) -> None:
        while True:
            try:
                name, args = conn.recv()
            except (EOFError, OSError):
                return
            if name == "start_changing":
                changing.set()
                conn.send(None)
            elif name == "outage":
                (down.set if args[0] else down.clear)()
                conn.send(None)
            elif down.is_set() and name not in BENCH_ASKS:
                conn.send(DOWN)
            elif name == "brokers":
                conn.send(model.brokers)
            else:
                conn.send(getattr(model, name)(*args))

    threading.Thread(target=change, daemon=True).start()
    reply.send(listener.address)
    while True:
        threading.Thread(target=serve, args=(no_delay(listener.accept()),), daemon=True).start()


def start_model_server(params: dict[str, Any]) -> tuple[Any, Any]:
    """(the server process, its address): the model built and served in a forked process."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe()
    process = ctx.Process(target=_serve_model, args=(params, theirs), daemon=True)
    process.start()
    return process, mine.recv()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=300_000)
    parser.add_argument("--groups", type=int, default=50_000)
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=30)
    parser.add_argument("--change-rate", type=float, default=0.01, help="share of the partitions changing per second")
    parser.add_argument("--failure-rate", type=float, default=0.0, help="share of the gateway's calls that fail")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--redis-down-after", type=float, default=None, metavar="SECONDS",
                        help="stop the bench's Redis this long into the run (and leave it down): what the watcher holds meanwhile")
    parser.add_argument("--outage-after", type=float, default=None, metavar="SECONDS",
                        help="the whole cluster stops answering this long into the run, for --outage-seconds")
    parser.add_argument("--outage-seconds", type=float, default=30.0)
    parser.add_argument("--broker-down-after", type=float, default=None, metavar="SECONDS",
                        help="take --broker-id out of the cluster this long into the run, for --broker-down-seconds")
    parser.add_argument("--broker-down-seconds", type=float, default=30.0)
    parser.add_argument("--broker-id", type=int, default=1)
    parser.add_argument("--append", action="store_true", help="add the figures to docs/benchmarks.md")
    parser.add_argument("--no-replica-lag", action="store_true", help="leave out the replica lag streaks (their cost)")
    parser.add_argument("--profile", action="store_true", help="print where one metadata cycle spends its time")
    parser.add_argument("--in-process", action="store_true",
                        help="the sampling passes in a thread of the watcher's process (WATCHER_SAMPLER_PROCESS=0)")
    parser.add_argument("--push-by-version", action="store_true",
                        help="also print each version's pushes (10 ms buckets), for bench.web_reads to add the page's part")
    args = parser.parse_args()
    result = measured(simulate, args)
    if args.append:
        append(args, result)


def measured(run: Callable[[argparse.Namespace], dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """`run(args)`'s figures, with a Redis of its own and the machine's reference time, printed as one JSON line."""
    reference = reference_seconds()
    with running_redis():
        result = run(args)
    result["machine_reference_seconds"] = reference
    print(json.dumps(result), flush=True)
    return result


def simulate(args: argparse.Namespace) -> dict[str, Any]:
    from bench.run import setup_django

    os.environ["CONSOLE_PROCESS"] = "watcher"  # as manage.py watch sets it (no web server loaded)
    setup_django()
    from console.lifecycle import tune_malloc

    tune_malloc()  # as `manage.py watch` does in the watcher's process (its sampling process does its own)
    from django.conf import settings
    from django.core.management import call_command
    from django.db.models import Count

    call_command("migrate", verbosity=0)
    settings.ANALYTICS_SAMPLES = False  # what the watcher writes for analytics is measured by bench.samples_overhead
    from brokers_app.models import Event
    from console.watcher import memory
    from console.watcher.loop import ClusterWatcher
    from console.watcher.memory import settle_gc, tune_gc, young
    from console.watcher.runner import cycle_delay

    built = time.monotonic()
    # The model in its own process (as a real cluster is), forked before this one starts threads.
    server, address = start_model_server({"partitions": args.partitions, "groups": args.groups, "brokers": args.brokers,
                                          "per_topic": args.partitions_per_topic, "change_rate": args.change_rate})
    gw = RemoteModelGateway(address, args.failure_rate)
    counts = gw.ask("counts")
    print(f"model of {counts['partitions']:,} partitions, {counts['groups']:,} groups, {counts['brokers']} brokers "
          f"built in {time.monotonic() - built:.1f} s (in its own process)", flush=True)
    # What this process holds before the watcher exists (Django, the clients): max RSS minus this
    # is the watcher's own share, near enough.
    before_rss = _current_rss_mb()
    Event.objects.filter(cluster="sim").delete()
    remote = not args.in_process
    watcher = ClusterWatcher("sim", "simulator", gw=gw, remote=remote,  # type: ignore[arg-type]
                             remote_gateway=RemoteModelFactory(address, args.failure_rate, 3) if remote else None,
                             events_thread=True)  # (as manage.py watch runs it)
    lag_seconds: list[float] = []  # (each cycle's time in the replica lag streaks: their share of the cycles)
    if args.no_replica_lag:  # (the cycle without the replica lag streaks: what they add to it)
        watcher.replica_lag.look = lambda snap, now: []  # type: ignore[method-assign]
    else:
        looked = watcher.replica_lag.look

        def timed_look(snap: Any, now: float) -> Any:
            began = time.perf_counter()
            try:
                return looked(snap, now)
            finally:
                lag_seconds.append(time.perf_counter() - began)

        watcher.replica_lag.look = timed_look  # type: ignore[method-assign]
    rss_watch = RssWatch(lambda: [None] + ([watcher.remote.pid] if watcher.remote is not None and watcher.remote.pid else []))
    stop = threading.Event()
    cpu = {"cycle": 0.0, "sampling": 0.0, "events": 0.0}
    cycle_times: list[float] = []
    settle_times: list[float] = []  # (of those, the collector's work after each cycle: settle_gc)
    # (counted in milliseconds, not kept one by one: 750,000 moves in ten minutes were 24 MB of the
    # watcher's process as floats in a list, 6 MB as an array, the bench's own bookkeeping counted
    # as the watcher's)
    pushes = Latencies()
    # With --push-by-version: per published version, its leader moves' pushes counted in 10 ms
    # buckets (bench.web_reads adds each version's time from its broadcast to the page).
    by_version: dict[int, dict[int, int]] = {}
    errors: list[str] = []

    def sampling() -> None:
        while not stop.is_set():
            started = time.monotonic()
            before = time.thread_time()
            try:
                watcher.sample_offsets(wait=1.0)
                watcher.refresh_configs()
            except Exception as exc:  # noqa: BLE001 - reported at the end
                errors.append(f"sampling: {exc!r}")
            cpu["sampling"] += time.thread_time() - before
            if not remote:
                stop.wait(max(0.1, settings.WATCHER_OFFSETS_INTERVAL - (time.monotonic() - started)))

    # The first cycle builds everything, and the first passes read every offset, size and group:
    # not part of the steady state measured.
    def one_pass() -> None:
        """Until a pass has been taken in (a first pass over a large model takes minutes)."""
        if watcher.remote is None:
            watcher.sample_offsets()
            return
        taken, deadline = len(watcher.remote.times), time.monotonic() + 1200
        while len(watcher.remote.times) == taken and time.monotonic() < deadline:
            watcher.sample_offsets(wait=5.0)

    warming = time.monotonic()
    watcher.cycle()
    tune_gc()  # as run_cluster does after its first cycle
    # Every topic's min ISR, read once as the sampling thread does when it starts: the first cycles
    # learn new topics' 200 at a time, and the whole read's arrival rebuilds every topic once (in the
    # run's first seconds it was the run's slowest cycle, 1.9-2.1 s, and all its pushes over 2 s).
    watcher.refresh_configs()
    for i in range(2):
        one_pass()
        if i == 0:
            first_pass = time.monotonic() - warming
        watcher.cycle()
        settle_gc()
    lag_seconds.clear()  # (the warm-up cycles' looks, which see every partition once, are not the run's)
    gc_time = {"seconds": 0.0, "started": 0.0, "collections": 0}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_time["started"] = time.perf_counter()
        else:
            gc_time["seconds"] += time.perf_counter() - gc_time["started"]
            gc_time["collections"] += 1

    gc.callbacks.append(on_gc)
    gw.ask("start_changing")
    if args.profile:
        import cProfile
        import pstats

        time.sleep(settings.WATCHER_OFFSETS_INTERVAL)
        profile = cProfile.Profile()
        profile.runcall(watcher.sample_offsets, wait=30.0)
        print("--- taking a pass in (the watcher's sampling thread)", file=sys.stderr)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(15)
        profile = cProfile.Profile()
        profile.runcall(watcher.cycle)
        print("--- metadata cycle", file=sys.stderr)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    threads = [threading.Thread(target=sampling, daemon=True)]
    for t in threads:
        t.start()
    rss_watch.phase = "run"
    began = time.monotonic()
    child_cpu_before = watcher.remote.child_cpu_seconds if watcher.remote is not None else 0.0
    watcher.publisher.flush()
    events_cpu_before = watcher.publisher.writer_cpu_seconds
    seen_moves = len(gw.ask("moves_since", 0))
    # each cycle's wall and CPU seconds, reading the metadata, until its snapshot was made, until it was
    # published, topics built and serialised, and when in the run it began (`slowest_cycles`)
    cycle_rows: list[tuple[float, float, float, float, float, int, int, float]] = []
    late_by_ten: Counter[int] = Counter()  # pushes over 2 s, by the ten seconds of the run they were seen in
    serialised: list[tuple[int, int, int]] = []  # (each cycle's topics and partitions serialised, and topics built: their metadata changed)
    pending: dict[tuple[str, int], tuple[float, int]] = {}  # a later move of a partition replaces the earlier
    redis_stopped = False
    outage = Outage(args.outage_after, args.outage_seconds)
    away = BrokerAway(args.broker_down_after, args.broker_down_seconds, args.broker_id)
    while time.monotonic() - began < args.seconds:
        started = time.monotonic()
        if args.redis_down_after is not None and not redis_stopped and started - began >= args.redis_down_after:
            subprocess.run(["pkill", "-f", f"redis-server 127.0.0.1:{REDIS_PORT}"], check=False)
            redis_stopped = True
        outage.turn(started - began, gw, rss_watch)
        away.turn(started - began, gw, rss_watch)
        before, wall_before = time.thread_time(), time.time()
        settled = None
        try:
            snap, _changes = watcher.cycle()
            settled = time.monotonic()
            settle_gc(settled - started)  # as run_cluster does after each cycle
        except Exception as exc:  # noqa: BLE001
            errors.append(f"cycle: {exc!r}")
            snap = None
        elapsed = time.monotonic() - started
        cycle_cpu = time.thread_time() - before
        cpu["cycle"] += cycle_cpu
        cycle_times.append(elapsed)
        built = len(snap.topics) - watcher.topics_reused if snap is not None and not watcher.unchanged else 0
        cycle_rows.append((elapsed, cycle_cpu, watcher.stats.metadata_seconds, watcher.stats.seconds,
                           max(0.0, (watcher.published_at or wall_before) - wall_before), built, watcher.topics_serialised,
                           started - began))
        serialised.append((watcher.topics_serialised, watcher.partitions_serialised, built))
        settle_times.append(started + elapsed - settled if settled is not None else 0.0)
        outage.cycled(elapsed, settle_times[-1], snap)
        away.cycled(elapsed, snap)
        if snap is not None and snap.reachable:
            published = watcher.published_at or time.time()  # (the snapshot goes out before its events are written)
            moves = gw.ask("moves_since", seen_moves)
            seen_moves += len(moves)
            for when, topic, partition, leader in moves:
                pending[(topic, partition)] = (when, leader)
            for key, (when, leader) in list(pending.items()):
                shown = snap.topics.get(key[0])
                if shown is not None and shown.partitions[key[1]].leader == leader:
                    if outage.spans(when, published):  # (made before the outage, shown after it: counted apart)
                        outage.pushes.append(published - when)
                        del pending[key]
                        continue
                    pushes.append(published - when)
                    if published - when > 2.0:
                        late_by_ten[int((started - began) // 10)] += 1
                    if args.push_by_version:
                        buckets = by_version.setdefault(snap.version, {})
                        bucket = int((published - when) * 100)
                        buckets[bucket] = buckets.get(bucket, 0) + 1
                    del pending[key]
        stop.wait(cycle_delay(elapsed, watcher.metadata_moved))  # (as run_cluster rests)
    wall = time.monotonic() - began
    stop.set()
    for t in threads:
        t.join(30)
    child_cpu = (watcher.remote.child_cpu_seconds - child_cpu_before) if watcher.remote is not None else 0.0
    rss_watch.stop()
    child_rss = watcher.remote.child_rss_mb if watcher.remote is not None else 0.0
    end_rss = _current_rss_mb()
    child_end_rss = _current_rss_mb(watcher.remote.pid) if watcher.remote is not None and watcher.remote.pid else 0.0
    watcher.close()  # (the events still being written are written)
    # The watcher's peak, read before the counting below, which is the bench's own: loading every
    # event row (750,000 after ten minutes) once added 200 MB to this process's peak.
    own_rss = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    cpu["events"] = watcher.publisher.writer_cpu_seconds - events_cpu_before
    counts = gw.ask("counts")
    server.kill()
    kinds = {kind: n for kind, n in Event.objects.filter(cluster="sim").values_list("kind").annotate(n=Count("id")).order_by()}
    ordered = sorted(cycle_times)
    return {
        "partitions": counts["partitions"],
        "groups": counts["groups"],
        "brokers": counts["brokers"],
        "change_rate": args.change_rate,
        "failure_rate": args.failure_rate,
        "redis_down_after": args.redis_down_after,
        "sampling": "thread" if args.in_process else "process",
        "seconds": round(wall, 1),
        "cycles": len(cycle_times),
        "cycle_p50_seconds": round(statistics.median(ordered), 4) if ordered else None,
        "cycle_max_seconds": round(ordered[-1], 4) if ordered else None,
        "replica_lag_p50_seconds": round(statistics.median(lag_seconds), 5) if lag_seconds else None,
        "replica_lag_share_of_cycles": round(sum(lag_seconds) / sum(cycle_times), 4) if lag_seconds and cycle_times else None,
        # (the budget's "cycle <= 1 s" and "pushed <= 2 s" as the typical figure: how many stay within)
        "cycle_p99_seconds": round(ordered[min(len(ordered) - 1, -(-len(ordered) * 99 // 100) - 1)], 4) if ordered else None,
        "cycles_over_1s": sum(1 for t in ordered if t > 1.0),
        # (a cycle's time includes the collector's work after it, as run_cluster counts it before
        # resting: at most, and for the slowest cycle)
        "settle_gc_max_seconds": round(max(settle_times), 4) if settle_times else None,
        "settle_gc_p50_seconds": round(sorted(settle_times)[len(settle_times) // 2], 4) if settle_times else None,
        # settle_gc's collections of what was not frozen yet, after a cycle in which something failed, and what they found
        "young_collections": young.count,
        "young_collections_found": young.found,
        # (the full collections in this process: how many, and the last one's time and unreachable objects)
        "first_pass_seconds": round(first_pass, 1),  # (from the first cycle to the first pass taken in)
        "sampler_restarts": watcher.remote.restarts if watcher.remote is not None else 0,
        "full_collections": memory.full_collections.count,
        "full_collection_last_seconds": round(memory.full_collections.seconds, 4),
        "full_collection_last_found": memory.full_collections.found,
        "settle_gc_of_slowest_cycle_seconds": round(settle_times[cycle_times.index(ordered[-1])], 4) if ordered else None,
        # The five slowest cycles: wall and CPU seconds (the metadata thread's own: less CPU than wall
        # is time waiting for the GIL or a core), reading the metadata, until the snapshot was made,
        # until it was published, topics built and serialised, and when in the run it began.
        "slowest_cycles": [[round(x, 3) if isinstance(x, float) else x for x in row]
                           for row in sorted(cycle_rows, reverse=True)[:5]],
        # CPU-seconds per wall second of the watcher: its metadata thread, its sampling thread (taking
        # the passes in), and the sampling process.
        "cpu_fraction": round((cpu["cycle"] + cpu["events"] + cpu["sampling"] + child_cpu) / wall, 3),
        "cpu_cycle_fraction": round(cpu["cycle"] / wall, 3),
        "cpu_events_fraction": round(cpu["events"] / wall, 3),  # (the thread writing the events)
        "cpu_sampling_fraction": round((cpu["sampling"] + child_cpu) / wall, 3),
        "cpu_merge_fraction": round(cpu["sampling"] / wall, 3),  # (this process taking the passes in)
        # The watcher's memory: this process's and the sampling process's peaks, added.
        "max_rss_mb": round(own_rss + child_rss, 1),
        "watcher_process_rss_mb": own_rss,
        "sampler_process_rss_mb": child_rss,
        # The most both held at once, read together every 50 ms: over the run, and over the warm-up
        # before it (the first cycle and the first full passes).
        "rss_together_max_mb": rss_watch.peaks.get("run", (None,))[0],
        "rss_together_at_max_mb": list(rss_watch.peaks.get("run", (None, None, None))[1:]),
        "rss_together_warmup_max_mb": rss_watch.peaks.get("warm-up", (None,))[0],
        "rss_before_watcher_mb": before_rss,
        "rss_at_end_mb": round(end_rss + child_end_rss, 1),  # (both processes, resident at the end)
        # Python's cyclic garbage collector in this process.
        "gc_fraction": round(gc_time["seconds"] / wall, 3),
        "gc_collections": gc_time["collections"],
        # What a cycle serialised: the topics it built or changed, and of their partitions those not
        # copied from the last JSON (the changed ones), on average.
        "topics_serialised_per_cycle": round(statistics.mean(s[0] for s in serialised)) if serialised else None,
        "partitions_serialised_per_cycle": round(statistics.mean(s[1] for s in serialised)) if serialised else None,
        "topics_built_per_cycle": round(statistics.mean(s[2] for s in serialised)) if serialised else None,
        "push_p50_seconds": pushes.median(),
        "push_max_seconds": round(pushes.max, 3) if pushes else None,
        "push_p99_seconds": pushes.percentile(99),
        "pushes_over_2s": sum(pushes.counts[2000:]),
        "pushes_over_2s_by_ten_seconds": {f"{k * 10}-{k * 10 + 10}": n for k, n in sorted(late_by_ten.items())},
        "leader_moves": counts["moves"],
        "leader_moves_seen": len(pushes),
        "leader_moves_unseen": len(pending),
        "model_changes": counts["changes"],
        # (with --broker-down-after, its broker's going and coming back are one event each)
        "spurious_events": sum(max(0, n - away.expected().get(k, 0)) for k, n in kinds.items() if k in SPURIOUS_KINDS),
        "events": kinds,
        "injected_failures": gw.failures,
        "errors": errors[:5],
        **(outage.figures(rss_watch) if args.outage_after is not None else {}),
        **(away.figures(rss_watch) if args.broker_down_after is not None else {}),
        **({"push_by_version": by_version} if args.push_by_version else {}),
    }


class Outage:
    """`--outage-after`: when the cluster stops and starts answering, and what the watcher did
    meanwhile and after."""

    def __init__(self, after: float | None, seconds: float) -> None:
        self.after, self.seconds = after, seconds
        self.state = "before"  # -> "down" -> "over"
        self.ended = 0.0
        self.cycles: list[float] = []  # (the cycles that began while it was down)
        self.settles: list[float] = []
        self.unreachable_shown = 0  # (of those, the ones whose snapshot said the cluster is unreachable)
        self.topics_kept: int | None = None  # (the fewest topics a snapshot of the outage still held)
        self.recovered_after: float | None = None  # from its end to the first reachable snapshot
        self.began_at: float | None = None  # (time.time(), as the model stamps its moves)
        self.pushes = Latencies()  # of the leader moves made before it and shown after it

    def spans(self, moved: float, published: float) -> bool:
        """Whether a move made then and published then waited across the outage."""
        return self.began_at is not None and moved <= self.began_at < published

    def turn(self, since_began: float, gw: Any, rss_watch: RssWatch) -> None:
        if self.after is None:
            return
        if self.state == "before" and since_began >= self.after:
            gw.ask("outage", True)
            self.state, rss_watch.phase, self.began_at = "down", "outage", time.time()
        elif self.state == "down" and since_began >= self.after + self.seconds:
            gw.ask("outage", False)
            self.state, rss_watch.phase, self.ended = "over", "after outage", time.monotonic()

    def cycled(self, seconds: float, settle: float, snap: Any) -> None:
        if self.state == "down":
            self.cycles.append(seconds)
            self.settles.append(settle)
            if snap is not None and not snap.reachable:
                self.unreachable_shown += 1
                kept = len(snap.topics)
                self.topics_kept = kept if self.topics_kept is None else min(self.topics_kept, kept)
        elif self.state == "over" and self.recovered_after is None and snap is not None and snap.reachable:
            self.recovered_after = time.monotonic() - self.ended

    def figures(self, rss_watch: RssWatch) -> dict[str, Any]:
        cycles, settles = sorted(self.cycles), sorted(self.settles)
        return {
            "outage_after": self.after,
            "outage_seconds": self.seconds,
            "outage_cycles": len(cycles),
            "outage_cycles_unreachable": self.unreachable_shown,
            "outage_topics_kept_min": self.topics_kept,
            "outage_cycle_p50_seconds": round(statistics.median(cycles), 4) if cycles else None,
            "outage_cycle_max_seconds": round(cycles[-1], 4) if cycles else None,
            "outage_settle_gc_p50_seconds": round(settles[len(settles) // 2], 4) if settles else None,
            "outage_settle_gc_max_seconds": round(settles[-1], 4) if settles else None,
            "rss_together_outage_max_mb": rss_watch.peaks.get("outage", (None,))[0],
            "rss_together_after_outage_max_mb": rss_watch.peaks.get("after outage", (None,))[0],
            "recovered_after_seconds": round(self.recovered_after, 3) if self.recovered_after is not None else None,
            "pushes_across_outage": len(self.pushes),
            "push_across_outage_max_seconds": round(self.pushes.max, 3) if self.pushes else None,
        }


class BrokerAway:
    """`--broker-down-after`: when the broker leaves and comes back, and the cycles that saw it."""

    def __init__(self, after: float | None, seconds: float, broker: int) -> None:
        self.after, self.seconds, self.broker = after, seconds, broker
        self.state = "before"  # -> "down" -> "back"
        self.seen_up: bool | None = None  # (as the last reachable snapshot showed it)
        self.seen: list[tuple[bool, float]] = []  # (up, the cycle's seconds) of each cycle that showed it change
        self.cycles: dict[str, list[float]] = {"down": [], "back": []}

    def turn(self, since_began: float, gw: Any, rss_watch: RssWatch) -> None:
        if self.after is None:
            return
        if self.state == "before" and since_began >= self.after:
            gw.ask("broker_down", self.broker)
            self.state = rss_watch.phase = "down"
        elif self.state == "down" and since_began >= self.after + self.seconds:
            gw.ask("broker_up", self.broker)
            self.state = rss_watch.phase = "back"

    def cycled(self, seconds: float, snap: Any) -> None:
        if self.after is None or snap is None or not snap.reachable or self.broker not in snap.brokers:
            return
        if self.state in self.cycles:
            self.cycles[self.state].append(seconds)
        up = snap.brokers[self.broker].up
        if self.seen_up is not None and up != self.seen_up:
            self.seen.append((up, seconds))
        self.seen_up = up

    def expected(self) -> dict[str, int]:
        """The broker events it made."""
        return {"broker_down": sum(1 for up, _s in self.seen if not up), "broker_up": sum(1 for up, _s in self.seen if up)}

    def figures(self, rss_watch: RssWatch) -> dict[str, Any]:
        def spread(times: list[float]) -> dict[str, float | None]:
            ordered = sorted(times)
            return {"p50": round(statistics.median(ordered), 4) if ordered else None, "max": round(ordered[-1], 4) if ordered else None}

        return {
            "broker_down_after": self.after,
            "broker_down_seconds": self.seconds,
            "broker_id": self.broker,
            # the cycles that showed it go (up false) and come back (up true), and their seconds
            "broker_seen": [[up, round(seconds, 4)] for up, seconds in self.seen],
            "broker_away_cycles": spread(self.cycles["down"]),  # (every cycle while it was out)
            "broker_back_cycles": spread(self.cycles["back"]),  # (and after it came back)
            "rss_together_broker_down_max_mb": rss_watch.peaks.get("down", (None,))[0],
            "rss_together_broker_back_max_mb": rss_watch.peaks.get("back", (None,))[0],
        }


class Latencies:
    """Seconds counted in 1 ms buckets (up to LATENCY_BUCKETS ms; longer ones in the last), with the
    exact largest: the median read from the buckets is within 0.5 ms of the exact one."""

    def __init__(self) -> None:
        self.counts = array("I", bytes(4 * LATENCY_BUCKETS))
        self.count = 0
        self.max = 0.0

    def append(self, seconds: float) -> None:
        self.counts[min(LATENCY_BUCKETS - 1, max(0, int(seconds * 1000)))] += 1
        self.count += 1
        self.max = max(self.max, seconds)

    def __len__(self) -> int:
        return self.count

    def median(self) -> float | None:
        """The middle value's bucket (its middle, in seconds); None when empty."""
        return self.percentile(50)

    def percentile(self, q: float) -> float | None:
        """The bucket (its middle, in seconds) of the value q% of the way up (the lower middle
        value for the median of an even count); None when empty."""
        if not self.count:
            return None
        wanted, seen = max(1, -(-self.count * q // 100)) if q != 50 else (self.count + 1) // 2, 0
        for ms, n in enumerate(self.counts):
            seen += n
            if seen >= wanted:
                return round(min(self.max, (ms + 0.5) / 1000), 4)
        return round(self.max, 4)


LATENCY_BUCKETS = 120_000


class RssWatch:
    """The most the watcher's two processes held at once: their resident sizes read together every
    `every` seconds, in a thread (their peaks added, `max_rss_mb`, are an upper bound: the two
    processes peak at different moments). `phase` names the part of the run being watched."""

    def __init__(self, pids: Any, every: float = 0.05) -> None:
        self.pids, self.every = pids, every
        self.peaks: dict[str, tuple[float, float, float]] = {}  # phase -> (both, this process, the other) at the most
        self.phase = "warm-up"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            sizes = []
            for pid in self.pids():
                try:
                    sizes.append(_current_rss_mb(pid))
                except OSError:  # (the sampling process restarting)
                    sizes.append(0.0)
            both = round(sum(sizes), 1)
            if both > self.peaks.get(self.phase, (0.0, 0.0, 0.0))[0]:
                mine, other = (sizes + [0.0, 0.0])[:2]
                self.peaks[self.phase] = (both, mine, other)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


def _current_rss_mb(pid: int | None = None) -> float:
    """A process's resident size now (VmRSS): read from /proc/<pid>/statm, one short line (RssWatch
    reads it 40 times a second in the watcher's own process: parsing /proc/<pid>/status took 4.6%
    of that process's samples, holding the GIL the cycles need)."""
    with open(f"/proc/{pid or 'self'}/statm", "rb") as f:
        return round(int(f.read().split()[1]) * _PAGE_MB, 1)


def append(args: argparse.Namespace, r: dict[str, Any]) -> None:
    command = (f".venv/bin/python -m bench.simulate --partitions {args.partitions} --groups {args.groups} --brokers {args.brokers} "
               f"--change-rate {args.change_rate} --failure-rate {args.failure_rate} --seconds {args.seconds:g}"
               + (" --in-process" if args.in_process else ""))
    text = "\n".join([
        f"\n## Watcher on a simulated cluster (issue 11), {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n",
        f"Command: `{command}` (no Kafka: the real watcher against bench/simulate.py's model, served from a process "
        f"of its own; sampling passes in {'a thread' if args.in_process else 'the sampling process'}; Redis and SQLite real).\n",
        "| partitions | groups | change rate | failure rate | cycles | cycle p50 | cycle max | CPU (watcher, both processes) | "
        "max RSS (watcher + sampling process) | most held at once (run / warm-up) | RSS at the end | leader move to snapshot p50 / max | spurious events |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {r['partitions']:,} | {r['groups']:,} | {r['change_rate']} | {r['failure_rate']} | {r['cycles']} | {r['cycle_p50_seconds']} s | "
        f"{r['cycle_max_seconds']} s | {r['cpu_fraction']} (cycle {r['cpu_cycle_fraction']}, events {r['cpu_events_fraction']}, sampling {r['cpu_sampling_fraction']}) | "
        f"{r['max_rss_mb']} MB ({r['watcher_process_rss_mb']} + {r['sampler_process_rss_mb']}) | "
        f"{r['rss_together_max_mb']} MB / {r['rss_together_warmup_max_mb']} MB | {r['rss_at_end_mb']} MB | "
        f"{r['push_p50_seconds']} s / {r['push_max_seconds']} s | {r['spurious_events']} |",
        "",
    ])
    with open(ROOT / "docs" / "benchmarks.md", "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
