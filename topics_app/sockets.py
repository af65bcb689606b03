"""The message browser's websocket: scans with live progress and stop, and live tail.

Kafka is read in worker threads (never on the event loop); each socket runs at most one scan and
one tail at a time, and both stop when the socket closes. Scans and tails run as tasks beside the
socket's message loop, never inside it: Channels handles one message per consumer at a time, so a
scan awaited in receive_json would hold back its own "stop" (and the disconnect) until it ended.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from console import error_responses
from console.auth import may
from console.errors import ConsoleError
from console.gateway.messages.records import Record
from console.gateway.messages.scan_spec import ScanProgress
from console.socket_guard import GuardedConsumer
from topics_app import browse
from topics_app.views import message_rows

log = logging.getLogger(__name__)


class MessagesConsumer(GuardedConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.topic = kwargs["cluster"], kwargs["topic"]
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self.scan_stop = threading.Event()
        self.scan_task: asyncio.Task[None] | None = None
        self.tail_stop = threading.Event()
        self.tail_task: asyncio.Task[None] | None = None
        if not await self.guard_open():
            return
        await self.accept()

    def still_allowed(self, user: Any) -> bool:
        return may(user, "messages.read", cluster=self.cluster, topic=self.topic)

    async def disconnect(self, code: int) -> None:
        # The reading threads see these within one batch (well under a second) and end.
        self.closed = True
        if hasattr(self, "scan_stop"):
            self.scan_stop.set()
            self.tail_stop.set()

    async def _send(self, message: dict[str, Any]) -> None:
        if not self.closed:
            await self.send_json(message)

    def _send_from_thread(self, message: dict[str, Any]) -> None:
        if not self.closed:
            asyncio.run_coroutine_threadsafe(self._send(message), self.loop)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        if not isinstance(content, dict):
            await self._send({"type": "error", "message": "A message must be a JSON object."})
            return
        action = content.get("action")
        # The page numbers its scans; replies carry the number so a superseded scan's are ignored.
        tag = content.get("id")
        ident: dict[str, Any] = {"id": tag} if isinstance(tag, (int, str)) and not isinstance(tag, bool) and len(str(tag)) <= 40 else {}
        params = content.get("params") or {}
        if not isinstance(params, dict):
            await self._send({"type": "error", **ident, "message": "'params' must be an object."})
            return
        params = {str(k): str(v) for k, v in params.items()}
        try:
            if action == "scan":
                await self._scan(params, ident)
            elif action == "stop":
                self.scan_stop.set()
            elif action == "tail":
                await self._tail(params)
            elif action == "stop_tail":
                self.tail_stop.set()
            else:
                await self._send({"type": "error", "message": f"Unknown action '{str(action)[:40]}'."})
        except ConsoleError as exc:
            await self._send(error_responses.socket_error(exc, self.notice_type, **ident))

    async def _scan(self, params: dict[str, str], ident: dict[str, Any]) -> None:
        req = await self._request(params)  # a bad request is refused before anything stops
        if self.scan_task is not None and not self.scan_task.done():
            # A new scan replaces the running one, which ends within one batch.
            self.scan_stop.set()
            await asyncio.wait([self.scan_task])
        refusal = await self.take_slot("scans")  # (after the replaced scan gave its slot back)
        if refusal is not None:
            await self._send({"type": "error", **ident, "message": refusal})
            return
        await self._audit(req, "scan")
        stop = self.scan_stop = threading.Event()
        self.scan_task = asyncio.ensure_future(self._run_scan(req, stop, ident))

    async def _run_scan(self, req: browse.BrowseRequest, stop: threading.Event, ident: dict[str, Any]) -> None:
        def on_progress(p: ScanProgress) -> bool:
            self._send_from_thread({"type": "progress", **ident, **browse.progress_dict(p)})
            return not stop.is_set()

        def work() -> dict[str, Any]:
            records, progress = browse.run_scan(self.cluster, req, on_progress, cancel=stop)
            rows = [browse.row(r, req.decode_key, req.decode_value) for r in records]
            earlier, later = browse.page_bounds(records, progress, req.spec.direction)
            return {"type": "result", **ident, "html": message_rows(rows), "count": len(rows), "earlier": earlier,
                    "later": later, "positions": browse.positions_param(progress), **browse.progress_dict(progress)}

        try:
            try:
                result = await sync_to_async(work, thread_sensitive=False)()
            finally:  # (given back before the page hears that the scan ended, so that it may start another)
                await self.free_slot("scans")
        except ConsoleError as exc:
            await self._send(error_responses.socket_error(exc, self.notice_type, **ident))
        except Exception as exc:
            log.exception("message scan of %s on %s failed", self.topic, self.cluster)
            await self._send({"type": "error", **ident,
                              "message": f"The scan failed unexpectedly ({type(exc).__name__}); the server log has the details."})
        else:
            await self._send(result)

    async def _request(self, params: dict[str, str]) -> browse.BrowseRequest:
        """The read with this user's masking (topics_app/masking.py); a bad request is refused here."""
        return await database_sync_to_async(browse.request_for)(self.scope["user"], self.cluster, self.topic, params)

    async def _audit(self, req: browse.BrowseRequest, how: str) -> None:
        """One audit entry per scan or tail that starts, with the socket's client address."""
        client = self.scope.get("client") or [None]
        await database_sync_to_async(browse.audit_read)(self.scope["user"], self.cluster, req, how, client[0])

    async def _tail(self, params: dict[str, str]) -> None:
        if self.tail_task is not None and not self.tail_task.done():
            return
        req = await self._request(params)
        refusal = await self.take_slot("tails")
        if refusal is not None:
            await self._send({"type": "error", "message": refusal})
            return
        await self._audit(req, "tail")
        stop = self.tail_stop = threading.Event()

        def on_records(records: list[Record]) -> bool:
            rows = [browse.row(r, req.decode_key, req.decode_value) for r in records]
            self._send_from_thread({"type": "records", "html": message_rows(list(reversed(rows))), "count": len(rows)})
            return not stop.is_set()

        def work() -> None:
            # "tailing" goes out once the end offsets are taken, so nothing written after it is missed.
            browse.run_tail(self.cluster, req, on_records, stop,
                            on_ready=lambda: self._send_from_thread({"type": "tailing"}))

        async def run() -> None:
            try:
                await sync_to_async(work, thread_sensitive=False)()
            except ConsoleError as exc:
                await self._send(error_responses.socket_error(exc, self.notice_type))
            finally:
                await self.free_slot("tails")
                await self._send({"type": "tail_stopped"})

        self.tail_task = asyncio.ensure_future(run())
