"""The rows a group's page reads on every view, in statements written once: its last rebalances
(consumers_app/group_history.py) and the cluster's latest finished analytics run (analytics/services.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analytics import services
from analytics.models import AnalyticsRun
from consumers_app import group_history
from consumers_app.models import Rebalance


def _rebalance(group: str, minutes_ago: int, cluster: str = "local") -> Rebalance:
    now = datetime.now(tz=UTC)
    return Rebalance.objects.create(cluster=cluster, group=group, started_at=now - timedelta(minutes=minutes_ago),
                                    ended_at=now, duration_s=1.5, joined=[{"client_id": "c", "host": "/h"}],
                                    moved=[{"topic": "t", "partition": minutes_ago}], trigger="member joined")


def test_a_groups_last_twenty_rebalances_come_newest_first_with_their_members(db: None) -> None:
    for minutes in range(25):
        _rebalance("g", minutes)
    _rebalance("other", 0)
    _rebalance("g", 0, cluster="elsewhere")

    rows = group_history.recent_rebalances("local", "g")

    assert [r.moved[0]["partition"] for r in rows] == list(range(20))
    assert rows[0].joined == [{"client_id": "c", "host": "/h"}] and rows[0].group == "g" and rows[0].trigger == "member joined"
    assert group_history.recent_rebalances("local", "none") == []


def test_the_latest_finished_run_is_the_newest_done_one_of_the_cluster(db: None) -> None:
    def run(state: str, cluster: str = "local") -> AnalyticsRun:
        return AnalyticsRun.objects.create(cluster=cluster, state=state, window_start_ms=0, window_end_ms=1, summary={"n": 1})

    assert services.latest_done("local") is None
    first = run(AnalyticsRun.DONE)
    second = run(AnalyticsRun.DONE)
    run(AnalyticsRun.FAILED)
    run(AnalyticsRun.DONE, cluster="elsewhere")

    found = services.latest_done("local")
    assert found is not None and found.pk == second.pk != first.pk and found.summary == {"n": 1}
