"""A StreamsGroupDescribe answer (as kafka-python decodes it) read into the console's streams group, and
that group as a row of the groups list: members' partitions are those their active tasks read."""

from __future__ import annotations

from typing import Any

from console.gateway.groups import _streams_group
from console.gateway.streams import read_group


def answer(**overrides: Any) -> dict[str, Any]:
    member = {
        "member_id": "m1", "member_epoch": 5, "instance_id": None, "rack_id": None, "client_id": "wc-StreamThread-1",
        "client_host": "/127.0.0.1", "topology_epoch": 0, "process_id": "p-1", "user_endpoint": None, "client_tags": [],
        "task_offsets": [], "task_end_offsets": [],
        "assignment": {"active_tasks": [{"subtopology_id": "1", "partitions": [1, 0]}, {"subtopology_id": "0", "partitions": [0]}],
                       "standby_tasks": [], "warmup_tasks": [{"subtopology_id": "0", "partitions": [1]}]},
        "target_assignment": {"active_tasks": [], "standby_tasks": [], "warmup_tasks": []},
        "is_classic": False,
    }
    topology = {"epoch": 0, "subtopologies": [
        {"subtopology_id": "1", "source_topics": [], "repartition_sink_topics": [],
         "state_changelog_topics": [{"name": "wc-changelog", "partitions": 0, "replication_factor": 0, "topic_configs": []}],
         "repartition_source_topics": [{"name": "wc-repartition", "partitions": 2, "replication_factor": 0, "topic_configs": []}]},
        {"subtopology_id": "0", "source_topics": ["input"], "repartition_sink_topics": ["wc-repartition"],
         "state_changelog_topics": [], "repartition_source_topics": []},
    ]}
    return {"error_code": 0, "error_message": None, "group_id": "wc", "group_state": "Stable", "group_epoch": 3,
            "assignment_epoch": 3, "topology": topology, "members": [member], "authorized_operations": 0, **overrides}


def test_an_answer_becomes_the_groups_topology_members_and_tasks() -> None:
    g = read_group(answer(), 2)
    assert (g.state, g.group_epoch, g.assignment_epoch, g.topology_epoch, g.coordinator, g.error) == ("Stable", 3, 3, 0, 2, None)
    assert [s.subtopology_id for s in g.subtopologies] == ["0", "1"]
    second = g.subtopologies[1]
    assert (second.source_topics, second.repartition_source_topics, second.changelog_topics) == (
        (), (("wc-repartition", 2),), ("wc-changelog",))
    assert second.inputs == ("wc-repartition",)
    assert g.subtopologies[0].repartition_sink_topics == ("wc-repartition",)
    (m,) = g.members
    assert (m.host, m.process_id, m.member_epoch, m.is_classic) == ("127.0.0.1", "p-1", 5, False)
    assert m.assignment.active == (("0", (0,)), ("1", (0, 1)))
    assert m.assignment.warmup == (("0", (1,)),) and m.target_assignment.active == ()
    assert g.input_partitions(m.assignment.active) == (("input", 0), ("wc-repartition", 0), ("wc-repartition", 1))


def test_a_group_without_a_topology_or_with_an_error_is_still_read() -> None:
    g = read_group(answer(topology=None, members=[], error_code=69, error_message="Group wc is not a streams group."), None)
    assert g.topology_epoch is None and g.subtopologies == () and g.members == ()
    assert g.error is not None and "not a streams group" in g.error


def test_in_the_groups_list_a_member_owns_the_partitions_its_active_tasks_read() -> None:
    row = _streams_group("wc", {"protocol_type": "streams"}, read_group(answer(), 2), lambda tp: tp)
    assert (row.group_type, row.state, row.generation, row.assignment_epoch, row.coordinator) == ("streams", "Stable", 3, 3, 2)
    assert row.members[0].assignment == (("input", 0), ("wc-repartition", 0), ("wc-repartition", 1))
