"""A tiered topic's figures from its offsets and log dir sizes (topics_app/tiered.py), with no Kafka."""

from __future__ import annotations

from console.gateway.tiered import TieredOffsets
from console.gateway.types import ConfigValue
from topics_app import tiered


def configs(**values: str) -> list[ConfigValue]:
    return [ConfigValue(k.replace("_", "."), v, "dynamic topic", False, False, False) for k, v in values.items()]


def part(n: int, size: int | None = 100) -> dict[str, object]:
    return {"partition": n, "leader": 1, "size": size, "replica_sizes": {"1": size} if size else {}}


def test_remote_storage_is_enabled_only_by_its_config_set_true() -> None:
    assert tiered.enabled(configs(remote_storage_enable="true"))
    assert not tiered.enabled(configs(remote_storage_enable="false"))
    assert not tiered.enabled(configs(retention_ms="1"))


def test_local_retention_minus_two_means_as_long_as_in_total() -> None:
    rows = tiered.retention(configs(retention_ms="86400000", local_retention_ms="-2", retention_bytes="5000",
                                    local_retention_bytes="1000"))
    assert rows == [{"unit": "ms", "total": "86400000", "local": "-2", "local_effective": "86400000"},
                    {"unit": "bytes", "total": "5000", "local": "1000", "local_effective": "1000"}]


def test_a_partition_partly_tiered_and_partly_deleted_locally() -> None:
    s = tiered.summary(configs(remote_storage_enable="true"), [part(0)], {0: TieredOffsets(100, 250, 299, 400)})
    p = s["partitions"][0]
    # 100..249 only remote, 250..299 in both, 300..399 local only (the tiering lag).
    assert (p["remote_only_records"], p["tiered_records"], p["local_records"], p["untiered_records"]) == (150, 200, 150, 100)


def test_nothing_tiered_yet_is_no_remote_extent_and_the_whole_log_waits() -> None:
    p = tiered.summary([], [part(0)], {0: TieredOffsets(0, 0, -1, 50)})["partitions"][0]
    assert (p["latest_tiered_offset"], p["tiered_records"], p["remote_only_records"], p["untiered_records"]) == (None, 0, 0, 50)


def test_without_offsets_the_local_figures_stand_and_the_rest_is_unknown() -> None:
    s = tiered.summary([], [part(0), part(1, None)], None, "Cluster 'x' did not answer.")
    assert s["totals"]["local_bytes"] == 100 and s["totals"]["replica_local_bytes"] == 100
    assert s["totals"]["tiered_records"] is None and s["offsets_error"] == "Cluster 'x' did not answer."
    assert s["partitions"][1]["local_bytes"] is None
