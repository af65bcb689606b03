"""Masked records everywhere they leave the server: the page, the websocket's scan and tail, the API and
its exports; in clear for an exempt user; and reads in the audit log. Kafka is a stand-in here that
answers every scan with the same records (applying the scan's filters, as the gateway does)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.test import Client

from console import gateway
from console.gateway.messages.records import Record
from console.gateway.messages.scan_spec import ScanProgress
from console.models import AuditEntry
from console.routing import websocket_urlpatterns
from console.snapshots import store
from tests.web.conftest import sample_snapshot
from topics_app import browse, services
from topics_app.models import MaskingPolicy

EMAIL, CARD, KEY, TOKEN = "alice.secret@example.com", "4111222233334444", "customer-7781-key", "Bearer tok-SECRET-99"
VALUE = json.dumps({"customer": {"email": EMAIL, "name": "Alice"}, "cards": [{"number": CARD}]}).encode()
RECORDS = [Record("orders", 0, 5, 1_700_000_000_000, "CreateTime", KEY.encode(), VALUE,
                  (("Authorization", TOKEN.encode()), ("trace", b"t-1")), len(KEY), len(VALUE))]
SECRETS = [EMAIL, CARD, KEY, TOKEN]


def forms_of(secret: str) -> list[str]:
    """The secret and the encodings a response could carry it in."""
    raw = secret.encode()
    return [secret, base64.b64encode(raw).decode(), raw.hex(), raw.hex(" "), base64.b64encode(VALUE).decode(), VALUE.hex()]


def assert_nothing_clear(body: str) -> None:
    for secret in SECRETS:
        for form in forms_of(secret):
            assert form not in body, f"{form!r} (from {secret!r}) reached the browser"


def fake_scan(gw: Any, spec: Any, matcher: Callable[[Record], bool] | None, on_progress: Any = None,
              raw_matcher: Callable[[bytes | None, bytes | None], bool] | None = None, cancel: Any = None,
              time_budget: Any = None) -> tuple[list[Record], ScanProgress]:
    found = [r for r in RECORDS if (raw_matcher is None or raw_matcher(r.key, r.value)) and (matcher is None or matcher(r))]
    return found, ScanProgress(scanned=len(RECORDS), matched=len(found), positions={0: 6}, done=True, reason="Read everything.")


def fake_tail(gw: Any, topic: str, partitions: Any, on_records: Callable[[list[Record]], bool], stop: threading.Event,
              matcher: Any = None, raw_matcher: Any = None, on_ready: Callable[[], None] | None = None) -> None:
    if on_ready is not None:
        on_ready()
    on_records([r for r in RECORDS if matcher is None or matcher(r)])
    stop.wait(5)


@pytest.fixture
def kafka_reads(redis_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = sample_snapshot(version=2)
    store.save(snap, snap.content_bytes())
    monkeypatch.setattr(gateway, "for_cluster", lambda name: object())
    monkeypatch.setattr(browse, "scan", fake_scan)
    monkeypatch.setattr(services, "scan", fake_scan)  # (republish reads the message it copies)
    monkeypatch.setattr(browse, "tail", fake_tail)


def user_in(name: str, *groups: str) -> User:
    user = User.objects.create_user(name, password="pw")
    user.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])
    return user


def make_policy() -> None:
    MaskingPolicy.objects.get_or_create(
        name="customer pii", defaults=dict(cluster="*", topic_kind="prefix", topic_pattern="ord", applies_to=[], exempt=["pii-readers"],
        targets=[{"kind": "json_path", "path": "$.customer.email"}, {"kind": "json_path", "path": "$.cards[*].number"},
                 {"kind": "header", "name": "authorization"}, {"kind": "key"}]))


@pytest.fixture
def masked(db: None, kafka_reads: None) -> Iterator[Client]:
    make_policy()
    c = Client()
    c.force_login(user_in("support", "operator"))
    yield c


@pytest.fixture
def exempt(db: None, kafka_reads: None) -> Client:
    make_policy()
    c = Client()
    c.force_login(user_in("dpo", "operator", "pii-readers"))
    return c


MESSAGES = "/clusters/local/topics/orders/messages/"
API = "/api/v1/clusters/local/topics/orders/messages/"


def body(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def test_the_message_page_shows_masked_fields_as_the_mark_and_sends_nothing_clear(masked: Client) -> None:
    page = masked.get(MESSAGES + "?run=1&start=oldest")
    text = body(page)
    assert page.status_code == 200 and "****" in text and "Alice" in text and "trace=t-1" in text
    assert "masked" in text
    assert_nothing_clear(text)


@pytest.mark.parametrize("decode", ["auto", "hex", "base64", "text"])
def test_the_api_masks_in_every_decoding(masked: Client, decode: str) -> None:
    response = masked.get(API, {"start": "oldest", "decode_key": decode, "decode_value": decode})
    text = body(response)
    assert response.status_code == 200
    assert_nothing_clear(text)
    row = response.json()["records"][0]
    assert row["key"] == "****" and row["key_format"] == "masked"
    assert {"key": "Authorization", "value": "****"} in row["headers"]
    if decode == "auto":
        assert json.loads(row["value"]) == {"customer": {"email": "****", "name": "Alice"}, "cards": [{"number": "****"}]}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_exports_carry_the_mark_and_nothing_clear(masked: Client, fmt: str) -> None:
    for decode in ("auto", "hex", "base64"):
        text = body(masked.get(API, {"start": "oldest", "format": fmt, "decode_value": decode}))
        assert "****" in text and "masked" in text
        assert_nothing_clear(text)
    if fmt == "jsonl":
        line = json.loads(body(masked.get(API, {"start": "oldest", "format": "jsonl"})).splitlines()[0])
        assert line["value"]["customer"]["email"] == "****" and line["key_format"] == "masked"


def test_an_exempt_user_sees_every_field_in_clear(exempt: Client) -> None:
    page = body(exempt.get(MESSAGES + "?run=1&start=oldest"))
    api = body(exempt.get(API, {"start": "oldest"}))
    jsonl = body(exempt.get(API, {"start": "oldest", "format": "jsonl"}))
    for text in (page, api, jsonl):
        assert EMAIL in text and CARD in text and KEY in text and "tok-SECRET-99" in text


def test_a_filter_cannot_find_records_by_a_masked_value(masked: Client, exempt: Client) -> None:
    for params in ({"q": EMAIL}, {"json_path": "$.customer.email", "json_value": EMAIL}, {"q": "tok-SECRET", "target": "headers"}):
        assert masked.get(API, {"start": "oldest", **params}).json()["records"] == []
        assert len(exempt.get(API, {"start": "oldest", **params}).json()["records"]) == 1


def test_a_policy_change_counts_from_the_next_request(masked: Client) -> None:
    assert EMAIL not in body(masked.get(API, {"start": "oldest"}))
    MaskingPolicy.objects.filter(name="customer pii").update(enabled=False)  # no signal: not seen yet
    MaskingPolicy.objects.get(name="customer pii").save()  # a save (admin, API) bumps the generation
    assert EMAIL in body(masked.get(API, {"start": "oldest"}))


def test_a_masked_user_cannot_republish_a_masked_message(masked: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    produced: list[Any] = []
    monkeypatch.setattr(services, "produce", lambda *args, **kwargs: produced.append(args))
    response = masked.post(API + "republish/", {"partition": 0, "offset": 5, "target_topic": "orders-copy"},
                           content_type="application/json")
    assert response.status_code == 403 and "masked parts" in response.json()["detail"]
    assert produced == []
    assert_nothing_clear(body(response))
    entry = AuditEntry.objects.get(action="republish")
    assert entry.outcome == "refused"


def test_reads_are_audited_once_each_with_their_range(masked: Client) -> None:
    masked.get(MESSAGES + "?run=1&start=offset&offset=3&partitions=0")
    masked.get(API, {"start": "oldest", "format": "csv"})
    masked.get(API, {"start": "timestamp", "timestamp": "1700000000000"})
    entries = list(AuditEntry.objects.filter(action="read_messages").order_by("id"))
    assert [e.details["how"] for e in entries] == ["page", "export_csv", "api"]
    assert all(e.username == "support" and e.target == "orders" and e.cluster == "local" for e in entries)
    assert entries[0].details["partitions"] == [0] and entries[0].details["offset"] == 3
    assert entries[2].details["timestamp_ms"] == 1_700_000_000_000
    assert entries[0].details["masked_by"] == ["customer pii"]


# The websocket ------------------------------------------------------------------------------------------


async def socket(user: User) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/clusters/local/topics/orders/messages/")
    comm.scope["user"] = user
    comm.scope["client"] = ["203.0.113.9", 50000]
    connected, _ = await comm.connect()
    assert connected
    return comm


async def until(comm: WebsocketCommunicator, kind: str, seen: list[str]) -> dict[str, Any]:
    while True:
        raw = await comm.receive_from(timeout=5)
        seen.append(raw)
        msg = json.loads(raw)
        if msg["type"] in (kind, "error"):
            return msg


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", ["masked", "exempt"])
async def test_scan_and_tail_over_the_socket_mask_for_a_masked_user_only(kafka_reads: None, who: str) -> None:
    await sync_to_async(make_policy)()
    user = await sync_to_async(user_in)(who, "viewer", *(["pii-readers"] if who == "exempt" else []))
    comm = await socket(user)
    seen: list[str] = []
    await comm.send_json_to({"action": "scan", "id": 1, "params": {"start": "oldest"}})
    scanned = await until(comm, "result", seen)
    await comm.send_json_to({"action": "tail", "params": {}})
    tailed = await until(comm, "records", seen)
    await comm.send_json_to({"action": "stop_tail"})
    await until(comm, "tail_stopped", seen)
    await comm.disconnect()
    assert scanned["type"] == "result" and tailed["type"] == "records"
    everything = "".join(seen)
    if who == "masked":
        assert "****" in scanned["html"] and "****" in tailed["html"]
        assert_nothing_clear(everything)
    else:
        assert EMAIL in scanned["html"] and EMAIL in tailed["html"] and "****" not in everything
    entries = await sync_to_async(lambda: list(AuditEntry.objects.filter(action="read_messages").order_by("id")))()
    assert [e.details["how"] for e in entries] == ["scan", "tail"]
    assert all(e.details["client"] == "203.0.113.9" and e.username == who for e in entries)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_an_open_socket_masks_the_next_scan_once_the_user_leaves_the_exempt_group(
        kafka_reads: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from topics_app import masking_policies

    monkeypatch.setattr(masking_policies, "NAMES_KEPT_S", 0.0)  # (5 s in service)
    await sync_to_async(make_policy)()
    user = await sync_to_async(user_in)("leaver", "viewer", "pii-readers")
    comm = await socket(user)
    seen: list[str] = []
    await comm.send_json_to({"action": "scan", "id": 1, "params": {"start": "oldest"}})
    assert EMAIL in (await until(comm, "result", seen))["html"]
    await sync_to_async(lambda: user.groups.remove(Group.objects.get(name="pii-readers")))()
    await comm.send_json_to({"action": "scan", "id": 2, "params": {"start": "oldest"}})
    second = await until(comm, "result", seen)
    await comm.disconnect()
    assert "****" in second["html"] and EMAIL not in second["html"]


def test_a_stored_policy_that_does_not_compile_stops_reads_with_a_sentence(masked: Client) -> None:
    MaskingPolicy.objects.create(name="hand-written", topic_kind="regex", topic_pattern="(orders", targets=[{"kind": "key"}])
    response = masked.get(API, {"start": "oldest"})
    assert response.status_code == 503 and "masking policy 'hand-written' is not valid" in response.json()["detail"]
    assert_nothing_clear(body(response))
    page = masked.get(MESSAGES + "?run=1&start=oldest")
    assert page.status_code == 503 and "is not valid" in body(page)
