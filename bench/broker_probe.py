"""The probe of the brokers' ports (watcher.reachability): what it costs a metadata cycle, and how
soon a SIGKILLed broker shows as unreachable.

    .venv/bin/python -m bench.broker_probe --cost --cycles 40      # no Kafka: 3 and 100 local ports
    .venv/bin/python -m bench.broker_probe --kills 5               # the test cluster and console

--cost: the probe alone (wall and CPU time of one probe of N local listening ports), and a watcher
cycle on bench.simulate's model with N brokers, each broker's port one of those listeners, with the
probe and with a probe that asks nothing: the cycle's wall time and its thread's CPU time (median).
--kills: the console's test stack (tests.support); a broker other than the controller SIGKILLed
`--kills` times, each time the seconds until the API marks it unreachable and until Kafka fences it
(the API says it is down), then restarted. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from typing import Any

from bench.simulate import Model, SimGateway, measured


def _listeners(n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        socks.append(s)
    return socks


def _drain(socks: list[socket.socket]) -> None:
    """The connections the probes opened, accepted and closed, as a broker would: the backlog stays free."""
    for s in socks:
        s.setblocking(False)
        try:
            while True:
                s.accept()[0].close()
        except BlockingIOError:
            pass


class _ProbedSim(SimGateway):
    """The model's brokers, each answering the probe on a local listening port of its own."""

    def __init__(self, model: Model, ports: list[int], real: bool) -> None:
        super().__init__(model, 0.0)
        self.ports = {(b.host, b.port): ("127.0.0.1", ports[i]) for i, b in enumerate(model.brokers)}
        self.real = real

    def probe_brokers(self, addresses: Any) -> dict[tuple[str, int], str]:
        from console.gateway.reachability import probe

        if not self.real:
            return dict.fromkeys(addresses, "accepted")
        found = probe([self.ports[a] for a in addresses])
        return {a: found[self.ports[a]] for a in addresses}


def cost(args: argparse.Namespace) -> dict[str, Any]:
    from bench.run import setup_django

    setup_django()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    settings.ANALYTICS_SAMPLES = False
    from console.gateway.reachability import probe
    from console.watcher.loop import ClusterWatcher

    result: dict[str, Any] = {}
    for n in (3, 100):
        socks = _listeners(n)
        ports = [s.getsockname()[1] for s in socks]
        addresses = [("127.0.0.1", p) for p in ports]
        walls, cpus = [], []
        for _ in range(args.cycles):
            w, c = time.perf_counter(), time.thread_time()
            assert set(probe(addresses).values()) == {"accepted"}
            cpus.append(time.thread_time() - c)
            walls.append(time.perf_counter() - w)
            _drain(socks)
        result[f"probe_{n}_wall_p50_ms"] = round(statistics.median(walls) * 1000, 3)
        result[f"probe_{n}_cpu_p50_ms"] = round(statistics.median(cpus) * 1000, 3)
        model = Model(args.partitions, 10, n, 10)
        watchers = {real: ClusterWatcher(f"probe-{n}-{real}", "bench", gw=_ProbedSim(model, ports, real), remote=False,  # type: ignore[arg-type]
                                         events_thread=True) for real in (False, True)}
        taken: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
        for i in range(args.cycles + 2):  # (the two watchers' cycles in turn: a machine's load moves both alike)
            for real, watcher in watchers.items():
                w, c = time.perf_counter(), time.thread_time()
                snap, _ = watcher.cycle()
                if i >= 2:
                    taken[real][1].append(time.thread_time() - c)
                    taken[real][0].append(time.perf_counter() - w)
                time.sleep(0.02)
                _drain(socks)
            assert all(b.reachable for b in snap.brokers.values())
        for real, watcher in watchers.items():
            watcher.close()
            which = "probed" if real else "unprobed"
            result[f"cycle_{n}_brokers_{which}_wall_p50_ms"] = round(statistics.median(taken[real][0]) * 1000, 3)
            result[f"cycle_{n}_brokers_{which}_cpu_p50_ms"] = round(statistics.median(taken[real][1]) * 1000, 3)
        for s in socks:
            s.close()
    result["partitions"] = args.partitions
    result["cycles"] = args.cycles
    return result


def _real_cycles(cycles: int) -> dict[str, Any]:
    """A watcher's cycle on the test cluster (its own snapshot key, beside the stack's watcher), with
    the probe and with one that asks nothing: median wall and CPU time."""
    from bench.run import setup_django

    setup_django()
    from django.conf import settings

    settings.ANALYTICS_SAMPLES = False
    from console import gateway
    from console.watcher.loop import ClusterWatcher

    watchers = {}
    for real in (False, True):
        gw = gateway.for_bootstrap(gateway.cluster_config("local").bootstrap_servers, timeout=10.0)
        if not real:
            gw.probe_brokers = lambda addresses: dict.fromkeys(addresses, "accepted")  # type: ignore[method-assign]
        watchers[real] = ClusterWatcher(f"bench-probe-{real}", "bench", gw=gw, remote=False, events_thread=True)
    taken: dict[bool, tuple[list[float], list[float], list[float], list[float]]] = {r: ([], [], [], []) for r in (False, True)}
    waited: dict[bool, list[float]] = {False: [], True: []}
    for real, watcher in watchers.items():
        take = watcher.reachability.take

        def timed_take(brokers: Any, wait: float = 0.05, take: Any = take, real: bool = real) -> frozenset[int]:
            started = time.perf_counter()
            try:
                return take(brokers, wait)  # type: ignore[no-any-return]
            finally:
                waited[real].append(time.perf_counter() - started)

        watcher.reachability.take = timed_take  # type: ignore[method-assign]
    for i in range(cycles + 3):  # (in turn: a machine's load moves both alike)
        for real, watcher in watchers.items():
            w, c = time.perf_counter(), time.thread_time()
            watcher.cycle()
            if i >= 3:
                taken[real][1].append(time.thread_time() - c)
                taken[real][0].append(time.perf_counter() - w)
                taken[real][2].append(watcher.stats.metadata_seconds)
                taken[real][3].append(waited[real][-1])
            time.sleep(0.2)
    result: dict[str, Any] = {}
    for real, watcher in watchers.items():
        watcher.close()
        which = "probed" if real else "unprobed"
        walls, cpus, metadata, waits = taken[real]
        result[f"cluster_cycle_{which}_wall_p50_ms"] = round(statistics.median(walls) * 1000, 3)
        result[f"cluster_cycle_{which}_cpu_p50_ms"] = round(statistics.median(cpus) * 1000, 3)
        result[f"cluster_cycle_{which}_metadata_p50_ms"] = round(statistics.median(metadata) * 1000, 3)
        result[f"cluster_cycle_{which}_probe_wait_p50_ms"] = round(statistics.median(waits) * 1000, 3)
    return result


def kills(args: argparse.Namespace) -> dict[str, Any]:
    from console.devcluster import DevCluster
    from tests.support import BASE_PORT, TEST_VAR, running_cluster, running_stack, wait_for

    unreachable_after: list[float] = []
    fenced_after: list[float] = []
    with running_cluster() as cluster, running_stack(cluster) as stack:
        cycles = _real_cycles(args.cycles)
        def brokers() -> dict[int, dict[str, Any]]:
            return {b["id"]: b for b in stack.get("/api/v1/clusters/local/brokers/").json()["brokers"]}

        for i in range(args.kills):
            wait_for(lambda: all(b["up"] and b["reachable"] for b in brokers().values()), 120, what="every broker up")
            leader = stack.get("/api/v1/clusters/local/").json()["quorum"]["leader_id"]
            victim = [b for b in (1, 2, 3) if b != leader][i % 2]
            killed = time.monotonic()
            DevCluster(TEST_VAR / "cluster", BASE_PORT).kill(victim)
            wait_for(lambda: not brokers()[victim]["reachable"], 30, interval=0.02, what="unreachable")  # noqa: B023
            unreachable_after.append(time.monotonic() - killed)
            wait_for(lambda: not brokers()[victim]["up"], 60, interval=0.1, what="fenced")  # noqa: B023
            fenced_after.append(time.monotonic() - killed)
            print(f"kill {i + 1}: broker {victim} unreachable after {unreachable_after[-1]:.2f} s, fenced after "
                  f"{fenced_after[-1]:.2f} s", file=sys.stderr, flush=True)
            for attempt in range(3):  # (a node restarted soon after a kill may stop at once on a fault of Kafka's own)
                try:
                    cluster.start(victim)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
    return {
        **cycles,
        "kills": args.kills,
        "unreachable_after_s": [round(x, 2) for x in unreachable_after],
        "unreachable_median_s": round(statistics.median(unreachable_after), 2),
        "fenced_after_s": [round(x, 2) for x in fenced_after],
        "fenced_median_s": round(statistics.median(fenced_after), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cost", action="store_true", help="the probe's cost, without Kafka")
    parser.add_argument("--kills", type=int, default=0, help="SIGKILL a broker this many times on the test cluster")
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args()
    if args.cost:
        measured(cost, args)
    if args.kills:
        measured(kills, args)


if __name__ == "__main__":
    main()
