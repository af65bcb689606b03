"""Parsers for the output of Apache Kafka's own tools, used as the test oracle."""

from __future__ import annotations

import json
import re
from typing import Any

_PARTITION = re.compile(
    r"Partition:\s*(?P<p>\d+)\s+Leader:\s*(?P<leader>\S+)\s+Replicas:\s*(?P<replicas>[\d,]*)\s+Isr:\s*(?P<isr>[\d,]*)"
)


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def topic_layout(describe_output: str) -> dict[int, dict[str, Any]]:
    """kafka-topics --describe: partition -> leader (None when offline), replicas, isr."""
    layout = {}
    for m in _PARTITION.finditer(describe_output):
        leader = m["leader"]
        layout[int(m["p"])] = {
            "leader": None if leader in {"none", "-1"} else int(leader),
            "replicas": _ids(m["replicas"]),
            "isr": _ids(m["isr"]),
        }
    return layout


def quorum_status(output: str) -> dict[str, Any]:
    """kafka-metadata-quorum describe --status."""
    fields = dict(line.split(":", 1) for line in output.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    return {
        "leader_id": int(fields["LeaderId"]),
        "leader_epoch": int(fields["LeaderEpoch"]),
        "voters": sorted(v["id"] for v in json.loads(fields["CurrentVoters"])),
        "observers": sorted(o["id"] for o in json.loads(fields["CurrentObservers"])),
    }


def api_layout(partitions: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {p["partition"]: {"leader": p["leader"], "replicas": p["replicas"], "isr": p["isr"]} for p in partitions}
