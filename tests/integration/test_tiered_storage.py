"""Tiered storage (KIP-405) on the test cluster, which runs Kafka's own LocalTieredStorage (console/devcluster.py):
a topic with remote.storage.enable=true, 1 MiB segments and 1 MiB of local retention gets ~3.5 MiB per
partition, so its three rolled segments move to remote storage and the first two leave the brokers' disks. The console's
figures then equal what the remote storage holds (the record batches of its segment files), the brokers'
log dirs (`kafka-log-dirs --describe`) and `kafka-get-offsets --time -2 / -4 / -5`. The page in light and
dark: Chromium on Django's live server (screenshots under var/screenshots/)."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.support import CHROMIUM_ARGS, ROOT, TEST_VAR, Stack, unique, wait_for

pytestmark = pytest.mark.cluster

API = "/api/v1/clusters/local/topics/"
REMOTE = TEST_VAR / "cluster" / "tiered-storage" / "kafka-tiered-storage"
PARTITIONS, RECORDS, RECORD_BYTES = 2, 360, 10_000  # per partition: ~3.5 MiB, three rolled 1 MiB segments (~104 records each)
SCREENSHOTS = ROOT / "var" / "screenshots"
PASSWORD = "tiered-pages-admin-password"


def remote_batches(topic: str, partition: int) -> list[tuple[int, int]]:
    """(first, last offset) of every record batch in the remote storage's segment files of one partition
    (LocalTieredStorage: <topic>-<partition>-<topic id>/<start offset>-<segment id>.log, Kafka's log format)."""
    found = []
    for path in REMOTE.glob(f"{topic}-{partition}-*/*.log"):
        data, pos = path.read_bytes(), 0
        while pos + 61 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            (last_delta,) = struct.unpack_from(">i", data, pos + 23)
            found.append((base, base + last_delta))
            pos += 12 + length
    return sorted(found)


def remote_log_bytes(topic: str, partition: int) -> tuple[int, int]:
    """(bytes, segments) of one partition's segment files in the remote storage."""
    files = list(REMOTE.glob(f"{topic}-{partition}-*/*.log"))
    return sum(f.stat().st_size for f in files), len(files)


def offsets_tool(stack: Stack, topic: str, time: str) -> dict[int, int]:
    out = stack.cluster.tool("kafka-get-offsets", "--topic", topic, "--time", time)
    return {int(p): int(o) for p, o in (line.rsplit(":", 2)[1:] for line in out.split())}


def log_dirs(stack: Stack, topic: str) -> dict[int, dict[str, int]]:
    import json

    out = stack.cluster.tool("kafka-log-dirs", "--describe", "--topic-list", topic)
    data = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    sizes: dict[int, dict[str, int]] = {}
    for b in data["brokers"]:
        for d in b["logDirs"]:
            for p in d["partitions"]:
                sizes.setdefault(int(p["partition"].rsplit("-", 1)[1]), {})[str(b["broker"])] = p["size"]
    return sizes


def tiered(stack: Stack, topic: str) -> dict[str, Any]:
    r = stack.get(API + topic + "/")
    assert r.status_code == 200, r.text
    section: dict[str, Any] = r.json()["tiered_storage"]
    return section


@pytest.fixture(scope="module")
def tiered_topic(stack: Stack) -> Iterator[str]:
    """A topic whose rolled segments are in remote storage, the last of them and the active one local too."""
    topic = unique("tiered")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "3",
                       "--config", "remote.storage.enable=true", "--config", "segment.bytes=1048576",
                       "--config", "local.retention.bytes=1048576")
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 65536})
    value = b"t" * RECORD_BYTES
    for i in range(RECORDS):
        for p in range(PARTITIONS):
            producer.produce(topic, value=value, key=str(i).encode(), partition=p)
        producer.poll(0)
    assert producer.flush(30) == 0

    def tiered_and_gone_locally() -> bool:
        # All three rolled segments copied (not the active one) and the first two deleted locally, as the
        # remote storage's files say too.
        t = tiered(stack, topic)
        return all(p["latest_tiered_offset"] is not None and p["latest_tiered_offset"] >= RECORDS * 3 // 4
                   and p["earliest_local_offset"] > 0 and remote_batches(topic, p["partition"])[-1][1] == p["latest_tiered_offset"]
                   for p in t["partitions"])

    wait_for(tiered_and_gone_locally, 60, interval=1, what="the rolled segments tiered and the oldest deleted locally")
    yield topic
    stack.cluster.tool("kafka-topics", "--delete", "--topic", topic)


def test_remote_figures_equal_the_remote_storages_segment_files(stack: Stack, tiered_topic: str) -> None:
    t = tiered(stack, tiered_topic)
    assert t["enabled"] is True and t["offsets_error"] is None
    for p in t["partitions"]:
        batches = remote_batches(tiered_topic, p["partition"])
        assert batches, f"no remote segment of partition {p['partition']} in {REMOTE}"
        covered = sum(last - first + 1 for first, last in batches)
        assert (p["earliest_offset"], p["latest_tiered_offset"]) == (batches[0][0], batches[-1][1]) == (0, covered - 1)
        assert p["tiered_records"] == covered and 0 < p["remote_only_records"] == p["earliest_local_offset"] < covered
        assert p["high_watermark"] == RECORDS and p["local_records"] == RECORDS - p["earliest_local_offset"]
        assert p["untiered_records"] == RECORDS - covered > 0  # (the active segment)
    assert t["totals"]["tiered_records"] == sum(p["tiered_records"] for p in t["partitions"])
    assert t["totals"]["untiered_records"] == PARTITIONS * RECORDS - t["totals"]["tiered_records"]
    assert [(r["unit"], r["local"], r["local_effective"]) for r in t["retention"]] == [("ms", "-2", "86400000"), ("bytes", "1048576", "1048576")]


def test_remote_bytes_equal_the_remote_storages_segment_files(stack: Stack, tiered_topic: str) -> None:
    """Each partition's remote bytes (the segments' sizes as __remote_log_metadata records them, decoded
    with Kafka's own message schemas) equal the sizes of the segment files the remote storage holds."""
    seen: dict[str, Any] = {}

    def equal() -> bool:
        t = seen["console"] = tiered(stack, tiered_topic)
        files = seen["files"] = {p["partition"]: remote_log_bytes(tiered_topic, p["partition"]) for p in t["partitions"]}
        return t["remote_error"] is None and all((p["remote_bytes"], p["remote_segments"]) == files[p["partition"]]
                                                 for p in t["partitions"])

    try:
        wait_for(equal, 30, interval=1, what="remote bytes equal to the remote storage's segment files")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {seen}") from None
    t = seen["console"]
    assert all(bytes_ > 3 * 1_000_000 and n == 3 for bytes_, n in seen["files"].values())  # (three ~1 MiB segments each)
    assert t["remote_bytes"] == t["totals"]["remote_bytes"] == sum(b for b, _n in seen["files"].values())
    assert t["remote_as_of"] is not None and "__remote_log_metadata" in t["sources"]["remote_bytes"]


def test_offsets_equal_kafka_get_offsets_and_local_sizes_the_log_dirs(stack: Stack, tiered_topic: str) -> None:
    t = {p["partition"]: p for p in tiered(stack, tiered_topic)["partitions"]}
    assert offsets_tool(stack, tiered_topic, "earliest") == {n: p["earliest_offset"] for n, p in t.items()}
    assert offsets_tool(stack, tiered_topic, "earliest-local") == {n: p["earliest_local_offset"] for n, p in t.items()}
    assert offsets_tool(stack, tiered_topic, "latest-tiered") == {n: p["latest_tiered_offset"] for n, p in t.items()}
    seen: dict[str, Any] = {}

    def sizes_match() -> bool:
        seen["kafka"] = expected = log_dirs(stack, tiered_topic)
        # Every replica's local log holds the last tiered segment and the active one: far less than the
        # ~3.5 MiB written. (Each follower drops its tiered segments at its own retention check, after the
        # leader did: the fixture waited for the leader only.)
        if not all(1024 * 1024 < n < 2 * 1024 * 1024 for sizes in expected.values() for n in sizes.values()):
            return False
        section = tiered(stack, tiered_topic)
        seen["console"] = got = {p["partition"]: p["replica_local_bytes"] for p in section["partitions"]}
        leaders = {p["partition"]: p["local_bytes"] == expected[p["partition"]][str(p["leader"])] for p in section["partitions"]}
        return got == expected and all(leaders.values()) and section["totals"]["replica_local_bytes"] == sum(
            n for sizes in expected.values() for n in sizes.values())

    try:
        wait_for(sizes_match, 30, interval=1, what="every replica's local size within 1 to 2 MiB and equal to kafka-log-dirs")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {seen}") from None


def test_the_topics_list_flags_the_tiered_topic(stack: Stack, tiered_topic: str) -> None:
    def flag() -> bool | None:
        rows = stack.get(API, params={"q": tiered_topic}).json()["results"]
        return next((r["tiered_storage"] for r in rows if r["name"] == tiered_topic), None)

    wait_for(flag, 20, interval=1, what="the tiered flag in the topics list")


@pytest.fixture(scope="module")
def browser(django_db_setup: None) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")  # (Playwright's loop in this thread is no ORM caller)
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                                         args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_topic_page_shows_tiered_storage_in_light_and_dark(browser: Any, live_server: Any, stack: Stack,
                                                               tiered_topic: str) -> None:
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("tiered-pages-viewer", password=PASSWORD)
    user.groups.set([Group.objects.get_or_create(name="viewer")[0]])
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        page.goto(live_server.url + "/login/")
        page.fill("input[name=username]", "tiered-pages-viewer")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        page.goto(f"{live_server.url}/clusters/local/topics/{tiered_topic}/")
        section = page.locator("#tiered-storage")
        assert section.is_visible()
        rows = page.locator("#tiered-partitions tbody tr")
        assert rows.count() == PARTITIONS
        assert int(page.locator("#tiered-remote-only").inner_text()) > 0
        assert int(page.locator("#tiered-remote-bytes").get_attribute("data-bytes") or 0) > 3 * 1_000_000
        assert "RemoteLogSizeBytes" in page.locator("#tiered-sources").inner_text()
        section.scroll_into_view_if_needed()
        section.screenshot(path=str(SCREENSHOTS / f"tiered-storage-{scheme}.png"))

        def tagged(page: Any = page) -> bool:
            page.goto(f"{live_server.url}/clusters/local/topics/?q={tiered_topic}")
            return bool(page.locator(f"tr[data-topic='{tiered_topic}'] .tag:text('tiered')").count())

        wait_for(tagged, 20, interval=1, what="the tiered tag in the topics list")
        context.close()
