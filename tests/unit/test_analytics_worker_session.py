"""The analytics worker's Spark session is made from the settings, SPARK_CONF's entries included."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from analytics import session as session_module
from analytics import tasks


def test_the_workers_session_takes_master_sizes_and_spark_conf_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    class Started:
        class sparkContext:  # noqa: N801 - Spark's own attribute name
            _jsc = object()

    def start(*args: Any, **kwargs: Any) -> Any:
        made.append((args, kwargs))
        return Started()

    monkeypatch.setattr(session_module, "spark_session", start)
    monkeypatch.setattr(tasks, "_spark", None)
    conf = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1", "spark.sql.adaptive.enabled": "false"}
    with override_settings(SPARK_MASTER="local[1]", SPARK_DRIVER_MEMORY="768m", SPARK_SHUFFLE_PARTITIONS=2, SPARK_CONF=conf):
        first = tasks.spark_session()
        assert tasks.spark_session() is first  # (kept warm: made once)
    assert len(made) == 1
    args, kwargs = made[0]
    assert args == ("local[1]", conf)
    assert kwargs["driver_memory"] == "768m" and kwargs["shuffle_partitions"] == 2
