"""brokers_app.placement.generate: Kafka's own --generate placement, modelled to compare plans with."""

from __future__ import annotations

import random
from typing import Any

import pytest

from brokers_app.placement.generate import kafka_generate, kafka_generate_expected
from brokers_app.placement.model import PlanRequest
from tests.unit._placement import cluster


class _Zero(random.Random):
    """Kafka's random start index and replica shift both 0, as with its fixedStartIndex=0."""

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        return 0


def test_kafka_model_matches_kafkas_documented_rack_unaware_example():
    # AdminUtils' javadoc: 5 brokers, 10 partitions, 3 replicas, start index 0.
    layout = cluster(range(5), *(("t", n, [0], 0) for n in range(10)))
    lists = kafka_generate(layout, PlanRequest.change_replication_factor(["t"], 3), _Zero())
    assert lists[("t", 0)] == (0, 1, 2)
    assert lists[("t", 4)] == (4, 0, 1)
    assert lists[("t", 5)] == (0, 2, 3)  # the followers shift after a full round
    assert lists[("t", 9)] == (4, 1, 2)


def test_kafka_model_matches_kafkas_documented_rack_aware_example():
    # AdminUtils' javadoc: racks 0->rack1, 1->rack3, 2->rack3, 3->rack2, 4->rack2, 5->rack1 give the
    # rack-alternated list 0, 3, 1, 5, 4, 2 and these assignments.
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    layout = cluster(racks, *(("t", n, [0, 1, 3], 0) for n in range(7)))
    lists = kafka_generate(layout, PlanRequest.rebalance(["t"]), _Zero())
    assert [lists[("t", n)] for n in range(7)] == [
        (0, 3, 1), (3, 1, 5), (1, 5, 4), (5, 4, 2), (4, 2, 0), (2, 0, 3), (0, 4, 2),
    ]


def test_kafka_model_expectation_is_the_mean_over_its_random_start_points():
    layout = cluster({1: "a", 2: "b", 3: "a", 4: "b"}, *(("t", n, [1 + n % 4, 1 + (n + 1) % 4], 10 + n) for n in range(6)))
    request = PlanRequest.rebalance()

    class Fixed(random.Random):
        def __init__(self, start: int, shift: int) -> None:
            super().__init__(0)
            self.values = [start, shift]

        def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
            return self.values.pop(0)

    moved = []
    for start in range(4):
        for shift in range(4):
            lists = kafka_generate(layout, request, Fixed(start, shift))
            moved.append(sum(p.size * len(set(lists[p.key]) - set(p.replicas)) for p in layout.partitions))
    assert kafka_generate_expected(layout, request).bytes == pytest.approx(sum(moved) / len(moved))


# Kafka's reassignment JSON ------------------------------------------------------------------------
