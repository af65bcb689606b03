"""Prometheus exposition of consumer lag, in the metric names kafka-lag-exporter uses, plus Burrow's
status as a number, so users of either can point their dashboards and alerts here."""

from __future__ import annotations

from collections.abc import Iterator

from console.snapshots import Snapshot
from consumers_app import group_rows

STATUS_VALUE = {"NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3, "STOP": 3, "STALL": 3, "REWIND": 3}


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}"


HELP = {
    "kafka_consumergroup_group_lag": "Messages the group is behind on a partition (end offset - committed).",
    "kafka_consumergroup_group_lag_seconds": "Estimated seconds the group is behind on a partition.",
    "kafka_consumergroup_group_max_lag": "Largest partition lag of the group.",
    "kafka_consumergroup_group_sum_lag": "Total lag of the group.",
    "kafka_consumergroup_group_max_lag_seconds": "Largest time lag of the group.",
    "kafka_consumergroup_group_status": "Lag status of the group: 0 NOTFOUND, 1 OK, 2 WARN, 3 ERR.",
    "kafka_consumergroup_partition_status": "Lag status of a partition: 1 OK, 2 WARN, 3 STOP/STALL/REWIND.",
    "kafka_consumergroup_group_members": "Members of the group.",
    "kafka_partition_latest_offset": "End offset (high watermark) of a partition.",
}


def exposition(snapshots: list[Snapshot]) -> Iterator[str]:
    samples: dict[str, list[str]] = {name: [] for name in HELP}
    for snap in snapshots:
        for row in group_rows.group_rows(snap):
            g = group_rows.group(snap, row["group"])
            base = {"cluster_name": snap.cluster, "group": row["group"]}
            samples["kafka_consumergroup_group_max_lag"].append(f"{_labels(**base)} {row['max_lag']}")
            samples["kafka_consumergroup_group_sum_lag"].append(f"{_labels(**base)} {row['total_lag']}")
            samples["kafka_consumergroup_group_members"].append(f"{_labels(**base)} {row['members']}")
            if row["time_lag"] is not None:
                samples["kafka_consumergroup_group_max_lag_seconds"].append(f"{_labels(**base)} {row['time_lag']:.3f}")
            if row["status"] is not None:
                samples["kafka_consumergroup_group_status"].append(f"{_labels(**base)} {STATUS_VALUE.get(row['status'], 0)}")
            for p in group_rows.partition_rows(snap, g):
                labels = _labels(**base, topic=p["topic"], partition=p["partition"],
                                 member_host=p["host"] or "", client_id=p["client_id"] or "")
                if p["lag"] is not None:
                    samples["kafka_consumergroup_group_lag"].append(f"{labels} {p['lag']}")
                if p["time_lag"] is not None:
                    samples["kafka_consumergroup_group_lag_seconds"].append(f"{labels} {p['time_lag']:.3f}")
                if p["status"] is not None:
                    samples["kafka_consumergroup_partition_status"].append(f"{labels} {STATUS_VALUE.get(p['status'], 0)}")
        for t in snap.topics.values():
            for part in t.partitions:
                if part.end_offset is not None:
                    samples["kafka_partition_latest_offset"].append(
                        f"{_labels(cluster_name=snap.cluster, topic=t.name, partition=part.partition)} {part.end_offset}")
    for name, lines in samples.items():
        yield f"# HELP {name} {HELP[name]}\n# TYPE {name} gauge\n"
        for line in lines:
            yield f"{name}{line}\n"
