"""Run by test_gateway_renewal.py in a process of its own (a crash must not take pytest with it):
two threads read offsets, two read configs and metadata, through one gateway, while a fifth renews
its librdkafka admin client whenever renew_admin allows (at most once a second), as stale-metadata
errors make the watcher do while topics are created and deleted. Prints "survived" and the counts."""

from __future__ import annotations

import os
import sys
import threading
import time


def main(bootstrap: str, seconds: float) -> None:
    os.environ["KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    import django

    django.setup()
    from console import gateway

    gw = gateway.for_cluster(gateway.cluster_configs()[0].name)
    parts = [(t.name, p.partition) for t in gw.metadata().topics for p in t.partitions]
    names = sorted({t for t, _ in parts})
    stop = time.monotonic() + seconds
    counts = {"offsets": 0, "configs": 0, "renewals": 0, "errors": 0}

    def offsets() -> None:
        while time.monotonic() < stop:
            try:
                gw.list_offsets(parts, "latest")
                counts["offsets"] += 1
            except Exception:  # noqa: BLE001 - counted; only a crash or a hang fails the test
                counts["errors"] += 1

    def configs() -> None:
        while time.monotonic() < stop:
            try:
                gw.topic_configs(names)
                gw.metadata()
                counts["configs"] += 1
            except Exception:  # noqa: BLE001
                counts["errors"] += 1

    def renew() -> None:
        while time.monotonic() < stop:
            counts["renewals"] += gw.renew_admin()
            time.sleep(0.05)

    threads = [threading.Thread(target=f) for f in (offsets, offsets, configs, configs, renew)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("survived", counts, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
