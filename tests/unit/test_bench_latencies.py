"""The scale bench's count of how long leader moves took to reach a snapshot (bench/simulate.py)."""

from __future__ import annotations

import random
import statistics

import pytest

from bench.simulate import Latencies


@pytest.mark.parametrize("seed", range(10))
def test_latencies_give_the_median_within_half_a_millisecond_and_the_exact_largest(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.choice([rng.expovariate(1.5), rng.uniform(0, 0.01), 100.0 * rng.random()]) for _ in range(rng.randint(1, 5000))]
    counted = Latencies()
    for v in values:
        counted.append(v)
    assert len(counted) == len(values) and counted.max == max(values)
    median = counted.median()
    assert median is not None
    # (of an even count, the lower of the two middle values, as statistics.median_low takes)
    assert abs(median - statistics.median_low(values)) <= 0.0005 + 1e-9

def test_no_latency_counted_has_no_median() -> None:
    assert Latencies().median() is None and len(Latencies()) == 0


@pytest.mark.parametrize("seed", range(10))
def test_latencies_give_a_percentile_within_half_a_millisecond(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.expovariate(2.0) for _ in range(rng.randint(1, 3000))]
    counted = Latencies()
    for v in values:
        counted.append(v)
    ordered = sorted(values)
    for q in (90, 99):
        got = counted.percentile(q)
        assert got is not None
        wanted = ordered[max(1, -(-len(ordered) * q // 100)) - 1]  # (the value q% of the way up)
        assert abs(got - wanted) <= 0.0005 + 1e-9, (q, got, wanted)
