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


def test_a_pages_figures_take_each_broadcast_to_the_first_fragment_of_its_version_or_a_later_one() -> None:
    """bench.web_reads.page_figures (also bench.browser_push's): broadcasts before the first fragment
    are counted apart (the process's first read); each later one is shown by the first fragment drawn
    from its version or a later one; change_to_page adds each version's pushes (10 ms buckets)."""
    from bench.web_reads import change_to_page, page_figures

    statuses = [(1, 100.0, 99.9, 99.5), (2, 101.0, 100.9, 100.5), (3, 102.0, 101.9, 101.5), (4, 103.0, 102.9, 102.5)]
    drawn = [(1, 100.5), (3, 102.4), (4, 103.2)]  # (version 2 never drawn: version 3's fragment shows it)
    figures = page_figures(statuses, drawn)
    assert figures["broadcasts_before_it"] == 1 and figures["broadcasts"] == 3 and figures["broadcasts_shown"] == 3
    assert figures["page_after"] == {2: pytest.approx(1.5), 3: pytest.approx(0.5), 4: pytest.approx(0.3)}
    assert figures["sent_to_fragment_max_seconds"] == 1.5 and figures["sent_to_status_p50_seconds"] == 0.1
    # Version 2 carried 3 moves pushed in 0.20-0.21 s, version 4 one in 0.05-0.06 s; version 9 was never broadcast here.
    shown = change_to_page({"2": {"20": 3}, "4": {"5": 1}, "9": {"1": 7}}, figures.pop("page_after"))
    assert shown["changes_shown"] == 4 and shown["change_to_page_max_seconds"] == 1.705
    assert shown["changes_over_2s"] == 0 and shown["change_to_page_p50_seconds"] == 1.705
    assert page_figures(statuses, [])["broadcasts_shown"] == 0
