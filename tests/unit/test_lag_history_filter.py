"""console.watcher.history: which lag history points the watcher stores."""

from __future__ import annotations

import random

import pytest

from console.watcher.history import LagHistoryFilter, Point


def run(f: LagHistoryFilter, samples: list[dict[str, Point]], fail: frozenset[int] = frozenset()) -> list[tuple[str, Point]]:
    stored: list[tuple[str, Point]] = []
    for i, points in enumerate(samples):
        out, trim = f.select(points)
        if i in fail:
            continue
        f.stored(out, trim)
        stored += [(gid, p) for gid, pts in out.items() for p in pts]
    return stored


def test_a_flat_run_is_stored_as_its_first_point_a_keepalive_and_its_last_point_before_a_change():
    f = LagHistoryFilter(keepalive=30, trim_every=1000)
    samples = [{"g": (float(t), 0, 0.0)} for t in range(0, 45, 3)] + [{"g": (45.0, 100, 2.0)}, {"g": (48.0, 100, 2.5)}]
    assert run(f, samples) == [("g", (0.0, 0, 0.0)), ("g", (30.0, 0, 0.0)), ("g", (42.0, 0, 0.0)), ("g", (45.0, 100, 2.0)),
                               ("g", (48.0, 100, 2.5))]


def test_the_chart_drawn_from_the_stored_points_equals_the_one_from_every_point():
    """Linear interpolation through the stored points gives every sample's values (flat runs and
    changes alike), over random walks of several groups."""
    rng = random.Random(7)
    f = LagHistoryFilter(keepalive=30, trim_every=1000)
    every: dict[str, list[Point]] = {"a": [], "b": [], "c": []}
    samples = []
    values = {g: (0, 0.0) for g in every}
    for i in range(400):
        t = i * 3.0
        for g in every:
            if rng.random() < 0.1:
                values[g] = (rng.choice([0, 0, 5, 50]), rng.choice([0.0, 1.5]))
            every[g].append((t, *values[g]))
        samples.append({g: every[g][-1] for g in every})
    stored = run(f, samples)
    for g, points in every.items():
        mine = [p for gid, p in stored if gid == g]
        assert len(mine) < len(points) / 2
        for t, lag, tl in points:
            before = max((p for p in mine if p[0] <= t), key=lambda p: p[0])
            after = [p for p in mine if p[0] >= t]
            if after:
                nxt = min(after, key=lambda p: p[0])
                if nxt[0] > before[0]:
                    w = (t - before[0]) / (nxt[0] - before[0])
                    assert before[1] + w * (nxt[1] - before[1]) == pytest.approx(lag)
                    continue
            assert before[1:] == (lag, tl)


def test_a_failed_write_is_tried_again_and_trimming_comes_every_so_many_points():
    f = LagHistoryFilter(keepalive=30, trim_every=3)
    out, trim = f.select({"g": (0.0, 1, None)})
    assert out == {"g": [(0.0, 1, None)]} and trim == {"g"}  # the first point trims (and sets the expiry)
    out, trim = f.select({"g": (3.0, 2, None)})  # not stored (Redis down): the next change still differs
    out, trim = f.select({"g": (6.0, 2, None)})
    assert out == {"g": [(6.0, 2, None)]}
    f.stored({"g": [(0.0, 1, None)]}, {"g"})
    counts = []
    for i in range(1, 10):
        out, trim = f.select({"g": (float(i * 3), i, None)})
        f.stored(out, trim)
        counts.append("g" in trim)
    assert counts == [False, False, True] * 3
    f.retain(set())
    assert f.runs == {}
