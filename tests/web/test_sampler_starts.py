"""When a sampling pass reads the partitions' start offsets (Sampler._starts_due): a log's start
moves only when Kafka deletes segments or records, or when the log is truncated or made anew, so
the pass reads them every WATCHER_STARTS_INTERVAL, and at once when one can have moved: the
partitions asked for changed, an end offset went down or below its start, or a topic changed
through the console (changes.note_change) since they were read. Between reads the pass hands on the
last start offsets, the same object."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import override_settings

from bench.simulate import Model, SimGateway
from console.gateway.errors import ClusterUnavailable
from console.snapshots import changes
from console.watcher.sampler import Sampler

pytestmark = pytest.mark.django_db


class CountingGateway(SimGateway):
    """The simulated gateway, counting the start offsets read (and failing them when told)."""

    def __init__(self, model: Model) -> None:
        super().__init__(model, 0.0)
        self.earliest = 0
        self.fail_earliest = False

    def list_offsets(self, partitions: Any, which: str) -> dict[tuple[str, int], int]:
        if which == "earliest":
            self.earliest += 1
            if self.fail_earliest:
                raise ClusterUnavailable("list offsets timed out")
        return super().list_offsets(partitions, which)


def test_start_offsets_are_read_when_due_or_when_one_can_have_moved(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1_900_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    model = Model(partitions=40, groups=4, brokers=3, per_topic=10, seed=5)  # 4 topics of 10 partitions
    gw = CountingGateway(model)
    cluster = "starts-test"
    partitions = [(t.name, p.partition) for t in gw.metadata().topics for p in t.partitions]
    first_topic = partitions[0][0]

    def model_starts() -> dict[tuple[str, int], int]:
        return {(name, p): part[3] for name, parts in model.topics.items() for p, part in enumerate(parts)}

    with override_settings(ANALYTICS_SAMPLES=False, WATCHER_STARTS_INTERVAL=15.0):
        sampler = Sampler(cluster, gw, True, lambda rows: None)  # type: ignore[arg-type]
        sample = sampler.take(partitions, [1, 2, 3])
        assert gw.earliest == 1 and dict(sample.starts) == model_starts()

        def again(seconds: float = 3.0) -> Any:
            nonlocal sample
            clock[0] += seconds
            last = sample
            sample = sampler.take(partitions, [1, 2, 3])
            return last

        # Nothing moved: not read; the same object handed on.
        last = again()
        assert gw.earliest == 1 and sample.starts is last.starts
        # Retention moved a start (the end went on): seen when the interval is up, not before.
        with model.lock:
            model.topics[first_topic][0][3] += 5
            model.topics[first_topic][0][4] += 10
        again()
        assert gw.earliest == 1 and sample.starts[(first_topic, 0)] == model_starts()[(first_topic, 0)] - 5
        again(12.0)  # (15 s after the first read)
        assert gw.earliest == 2 and dict(sample.starts) == model_starts()
        # The topic deleted and made again: its ends went down; read at once.
        with model.lock:
            for part in model.topics[first_topic]:
                part[3], part[4] = 0, 2
        again()
        assert gw.earliest == 3 and dict(sample.starts) == model_starts() and dict(sample.ends)[(first_topic, 0)] == 2
        # An end that went up is no reason to read them.
        with model.lock:
            model.topics[first_topic][1][4] += 100
        again()
        assert gw.earliest == 3
        # Records deleted through the console (noted for read-your-writes): read at the next pass.
        with model.lock:
            model.topics[first_topic][1][3] = 50
        changes.note_change(cluster, {f"offsets:{first_topic}": 1})
        again()
        assert gw.earliest == 4 and sample.starts[(first_topic, 1)] == 50
        again()  # (the note is older than that read: not again)
        assert gw.earliest == 4
        # Other partitions asked for (a partition back online, a new topic): read at once.
        every, partitions = partitions, partitions[:-1]
        again()
        assert gw.earliest == 5
        # A read that failed keeps the last starts and is tried again at the next pass.
        partitions = every
        gw.fail_earliest = True
        last = again()
        assert gw.earliest == 6 and sample.starts is last.starts
        gw.fail_earliest = False
        again()
        assert gw.earliest == 7 and dict(sample.starts) == model_starts()
        again()
        assert gw.earliest == 7
