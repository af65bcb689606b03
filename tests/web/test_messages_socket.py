"""The message browser's socket runs a scan beside its message loop: Stop, a new scan and closing
the page all reach a running scan at once (the scan here is a stand-in that reads until cancelled)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from console.gateway.messages.scan_spec import ScanProgress
from console.routing import websocket_urlpatterns

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


class EndlessScan:
    """Stands in for browse.run_scan: reads 'forever' in its worker thread until cancelled."""

    def __init__(self) -> None:
        self.ended: list[float] = []
        self.calls = 0

    def __call__(self, cluster: str, req: Any, on_progress: Any = None, cancel: threading.Event | None = None,
                 budget: float | None = None) -> tuple[list[Any], ScanProgress]:
        assert cancel is not None, "a websocket scan must be cancellable"
        self.calls += 1
        progress = ScanProgress()
        try:
            deadline = time.monotonic() + 30
            while not cancel.is_set() and time.monotonic() < deadline:
                time.sleep(0.02)
                progress.scanned += 1000
                if on_progress is not None and progress.scanned % 10_000 == 0:
                    on_progress(ScanProgress(scanned=progress.scanned))
            progress.done, progress.stopped = True, cancel.is_set()
            progress.reason = "Stopped before the end, as asked." if progress.stopped else "Read everything."
            return [], progress
        finally:
            self.ended.append(time.monotonic())


@pytest.fixture
def endless(monkeypatch: pytest.MonkeyPatch) -> EndlessScan:
    from topics_app import browse

    fake = EndlessScan()
    monkeypatch.setattr(browse, "run_scan", fake)
    return fake


async def socket() -> WebsocketCommunicator:
    user = await database_sync_to_async(User.objects.create_user)(f"msg-{time.monotonic_ns()}", password="x")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/clusters/local/topics/orders/messages/")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    return comm


async def result(comm: WebsocketCommunicator) -> dict[str, Any]:
    while True:
        msg = await comm.receive_json_from(timeout=3)
        if msg["type"] in ("result", "error"):
            return msg


async def test_stop_reaches_a_running_scan_at_once(endless: EndlessScan) -> None:
    comm = await socket()
    await comm.send_json_to({"action": "scan", "id": 7, "params": {"start": "oldest", "q": "x"}})
    assert (await comm.receive_json_from(timeout=3))["type"] == "progress"  # the scan is running
    asked = time.monotonic()
    await comm.send_json_to({"action": "stop"})
    msg = await result(comm)
    assert msg["type"] == "result" and msg["id"] == 7 and msg["stopped"] is True
    assert time.monotonic() - asked < 0.5
    await comm.disconnect()


async def test_closing_the_page_ends_its_scan(endless: EndlessScan) -> None:
    comm = await socket()
    await comm.send_json_to({"action": "scan", "params": {"start": "oldest"}})
    await comm.receive_json_from(timeout=3)
    closed = time.monotonic()
    await comm.disconnect()
    for _ in range(40):
        if endless.ended:
            break
        await comm.receive_nothing(timeout=0.05)
    assert endless.ended and endless.ended[0] - closed < 0.5


async def test_a_new_scan_replaces_the_running_one_and_replies_carry_their_scan_id(endless: EndlessScan) -> None:
    comm = await socket()
    await comm.send_json_to({"action": "scan", "id": 1, "params": {"start": "oldest"}})
    await comm.receive_json_from(timeout=3)
    await comm.send_json_to({"action": "scan", "id": 2, "params": {"start": "oldest"}})
    first = await result(comm)
    assert first["id"] == 1 and first["stopped"] is True
    await comm.send_json_to({"action": "stop"})
    second = await result(comm)
    assert second["id"] == 2 and second["stopped"] is True and endless.calls == 2
    await comm.disconnect()


async def test_a_bad_scan_request_is_an_error_with_its_id_and_leaves_the_socket_usable(endless: EndlessScan) -> None:
    comm = await socket()
    await comm.send_json_to({"action": "scan", "id": 3, "params": {"regex": "([unclosed"}})
    msg = await comm.receive_json_from(timeout=3)
    assert msg["type"] == "error" and msg["id"] == 3 and "regex" in msg["message"]
    await comm.send_json_to({"action": "scan", "id": 4, "params": {}})
    await comm.send_json_to({"action": "stop"})
    assert (await result(comm))["id"] == 4
    await comm.disconnect()
