"""Streams groups (KIP-1071) with a real Kafka Streams application: Apache Kafka's WordCountDemo run with
`group.protocol=streams` (tests/streams_app.py). The console's description equals
`kafka-streams-groups --describe --members --verbose` and `--describe --offsets --verbose`; a reset
while the application runs is refused with a sentence; once it is stopped, a reset to earliest from
the console is what `kafka-streams-groups` then shows, and the group is deleted with its internal
topics. The group page in light and dark (screenshots under var/screenshots/)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from django.contrib.auth.models import Group, User

from console.converters import encode_name
from tests.streams_app import INPUT, StreamsApp, running_wordcount
from tests.support import CHROMIUM_ARGS, ROOT, Stack, time_budget, unique, wait_for

pytestmark = [pytest.mark.cluster]

API = "/api/v1/clusters/local/consumer-groups/"
SCREENSHOTS = ROOT / "var" / "screenshots"
PASSWORD = "streams-pages-admin-password"
LINES = ["all streams flow to the sea", "the sea is never full", "to the place the streams come from"]


def produce(stack: Stack, lines: list[str]) -> None:
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap})
    for i, line in enumerate(lines):
        producer.produce(INPUT, value=line.encode(), key=str(i).encode(), partition=i % 2)
    assert producer.flush(20) == 0


def described(stack: Stack, group: str) -> dict[str, Any] | None:
    r = stack.get(API + encode_name(group) + "/streams/")
    return r.json() if r.status_code == 200 else None


def committed(stack: Stack, group: str) -> dict[tuple[str, int], int | None]:
    d = described(stack, group)
    assert d is not None
    return {(r["topic"], r["partition"]): r["committed"] for s in d["lag"] for r in s["partitions"]}


def caught_up(stack: Stack, group: str) -> dict[str, Any] | None:
    """The running group, each subtopology's tasks assigned and its inputs read to their ends."""
    d = described(stack, group)
    if not d or d["state"] != "Stable" or len(d["members"]) != 1 or len(d["subtopologies"]) != 2:
        return None
    active = d["members"][0]["assignment"]["active"]
    if sorted(t["subtopology"] for t in active) != ["0", "1"] or any(t["partitions"] != [0, 1] for t in active):
        return None
    rows = [r for s in d["lag"] for r in s["partitions"]]  # the input and the repartition topic, two partitions each
    # (ends equal to the commits, not only lag 0: the watcher reads a new topic's ends on its next pass, and
    # a commit read before them would floor the lag at 0 against an end that is not yet known to be 20)
    return d if len(rows) == 4 and all(r["committed"] is not None and r["end_offset"] == r["committed"] and r["lag"] == 0
                                       for r in rows) else None


def table(output: str, aligned: bool = False) -> list[dict[str, str]]:
    """The rows of a kafka-streams-groups table: a header line, then rows split on whitespace (the last
    column takes the rest of its line), or, `aligned`, cut where each header starts (a cell may be
    empty there: the verbose offsets leave LEADER-EPOCH blank)."""
    rows, header, starts = [], None, []
    for line in output.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "GROUP":
            header, starts = parts, [m.start() for m in re.finditer(r"\S+", line)]
            continue
        if header and aligned:
            bounds = [*starts[1:], len(line)]
            rows.append({h: line[a:b].strip() for h, a, b in zip(header, starts, bounds, strict=True)})
        elif header:
            rows.append(dict(zip(header, line.split(None, len(header) - 1), strict=False)))
    return rows


@pytest.fixture(scope="module")
def app(stack: Stack) -> Iterator[StreamsApp]:
    with running_wordcount(stack.cluster, unique("wordcount")) as running:
        produce(stack, LINES)
        wait_for(lambda: caught_up(stack, running.app_id), time_budget(60), interval=0.5, what="the Streams application caught up")
        yield running


def test_the_description_equals_kafka_streams_groups(stack: Stack, app: StreamsApp) -> None:
    group = app.app_id
    d = wait_for(lambda: caught_up(stack, group), 30, interval=0.5, what="the group caught up")
    members = table(stack.cluster.tool("kafka-streams-groups", "--describe", "--members", "--verbose", "--group", group))
    (m,) = d["members"]
    (row,) = members
    assert (row["GROUP"], row["MEMBER"], row["PROCESS"], row["CLIENT-ID"]) == (group, m["member_id"], m["process_id"], m["client_id"])
    assert (row["MEMBER-PROTOCOL"], row["MEMBER-EPOCH"]) == (m["protocol"], str(m["member_epoch"]))
    assert (row["TARGET-ASSIGNMENT-EPOCH"], row["TOPOLOGY-EPOCH"]) == (str(d["assignment_epoch"]), str(d["topology_epoch"]))
    tasks = row["ASSIGNMENTS"]
    for kind, label in (("active", "ACTIVE"), ("standby", "STANDBY"), ("warmup", "WARMUP")):
        theirs = re.search(rf"(?<!TARGET-){label}:((?:\s*\d+:\[[\d,]*\];)*)", tasks)
        ours = "".join(f"{t['subtopology']}:[{','.join(map(str, t['partitions']))}];" for t in m["assignment"][kind])
        assert (theirs.group(1).replace(" ", "") if theirs else "") == ours, tasks
    # The topology: WordCountDemo's two subtopologies, through a repartition topic and a changelog.
    first, second = d["subtopologies"]
    repartition = f"{group}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    assert (first["source_topics"], first["repartition_sink_topics"]) == ([INPUT], [repartition])
    assert second["source_topics"] == [] and second["repartition_source_topics"] == [{"topic": repartition, "partitions": 2}]
    assert second["changelog_topics"] == [f"{group}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"]

    offsets = table(stack.cluster.tool("kafka-streams-groups", "--describe", "--offsets", "--verbose", "--group", group), aligned=True)
    tool_lag = {(r["TOPIC"], int(r["PARTITION"])): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["OFFSET-LAG"]) for r in offsets}
    our_lag = {(r["topic"], r["partition"]): (str(r["committed"]), str(r["end_offset"]), str(r["lag"]))
               for s in d["lag"] for r in s["partitions"]}
    assert our_lag == tool_lag and len(our_lag) == 4


def test_a_reset_of_the_running_application_is_refused_with_a_sentence(stack: Stack, app: StreamsApp) -> None:
    r = stack.api("operator").post(stack.base_url + API + encode_name(app.app_id) + "/offsets/",
                                   json={"to": "earliest", "confirm": app.app_id}, timeout=20)
    assert r.status_code == 400, r.text
    assert r.json()["detail"].startswith(f"Streams group '{app.app_id}' is Stable with 1 member: its offsets can only be reset "
                                         "while the group is inactive"), r.text


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_group_page_shows_the_topology_and_tasks_in_light_and_dark(live_server: Any, stack: Stack, app: StreamsApp) -> None:
    from playwright.sync_api import sync_playwright

    user = User.objects.create_user("streams-pages-admin", password=PASSWORD)
    user.groups.set([Group.objects.get_or_create(name="admin")[0]])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as p:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                                    args=CHROMIUM_ARGS)
        for scheme in ("light", "dark"):
            page = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme).new_page()
            page.goto(live_server.url + "/login/")
            page.fill("input[name=username]", "streams-pages-admin")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_load_state()
            page.goto(f"{live_server.url}/clusters/local/groups/{encode_name(app.app_id)}/")
            assert page.locator("#streams-topology tbody tr").count() == 2
            assert page.locator(f"#streams-topology tr[data-subtopology='0'] :text('{INPUT}')").is_visible()
            member = page.locator("#streams-members tbody tr").first
            assert "0: 0, 1" in member.locator(".tasks-active").inner_text()
            assert page.locator("#streams-lag tbody tr").count() == 4
            page.locator("#streams").scroll_into_view_if_needed()
            page.screenshot(path=str(SCREENSHOTS / f"streams-group-{scheme}.png"), full_page=True)
            page.context.close()
        browser.close()


def tool_plan(stack: Stack, group: str, *args: str) -> dict[tuple[str, int], int]:
    """`kafka-streams-groups --reset-offsets ... --dry-run`: the offsets the tool would set (with
    --to-current: the group's committed offsets as Kafka holds them; its --describe shows nothing of an
    inactive group)."""
    out = stack.cluster.tool("kafka-streams-groups", "--reset-offsets", "--group", group, *args, "--dry-run")
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in table(out, aligned=True)}


def test_once_stopped_a_reset_to_earliest_is_what_the_tool_shows_and_the_group_is_deleted(stack: Stack, app: StreamsApp) -> None:
    group = app.app_id
    app.stop()
    wait_for(lambda: (d := described(stack, group)) and d["state"] == "Empty" and not d["members"], 60, interval=0.5,
             what="the group empty once the application stopped")
    operator = stack.api("operator")
    url = stack.base_url + API + encode_name(group) + "/offsets/"
    # No topics named: the topology's input topics, not its repartition topic, as --all-input-topics.
    preview = operator.post(url, json={"to": "earliest", "dry_run": True}, timeout=20)
    assert preview.status_code == 200, preview.text
    planned = {(r["topic"], r["partition"]): r["new"] for r in preview.json()["offsets"]}
    assert planned == tool_plan(stack, group, "--all-input-topics", "--to-earliest") == {(INPUT, 0): 0, (INPUT, 1): 0}
    before = committed(stack, group)
    done = operator.post(url, json={"to": "earliest", "confirm": group}, timeout=20)
    assert done.status_code == 200, done.text
    assert {(r["topic"], r["partition"]): r["new"] for r in done.json()["offsets"]} == planned
    assert tool_plan(stack, group, "--all-input-topics", "--to-current") == planned
    wait_for(lambda: committed(stack, group) == {**before, **planned}, 20, what="the console's input lag from the new offsets")

    # Deleted with its internal topics (an admin's change), as --delete --delete-all-internal-topics.
    internal = [f"{group}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-{kind}" for kind in ("changelog", "repartition")]
    r = stack.api("admin").delete(stack.base_url + API + encode_name(group) + "/", json={"confirm": group, "internal_topics": True},
                                  timeout=30)
    assert r.status_code == 200, r.text
    assert r.json() == {"deleted": group, "deleted_topics": internal}
    listed = stack.cluster.tool("kafka-streams-groups", "--list")
    assert group not in listed.split(), listed
    wait_for(lambda: not set(internal) & set(stack.cluster.tool("kafka-topics", "--list").split()), 20,
             what="the internal topics deleted")
