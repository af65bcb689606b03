"""The message browser's websocket: scans with live progress and stop, and live tail.

Kafka is read in worker threads (never on the event loop); each socket runs at most one scan and
one tail at a time, and both stop when the socket closes.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from console.errors import ConsoleError
from console.gateway.messages import Record, ScanProgress
from topics_app import browse
from topics_app.views import message_rows


class MessagesConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.topic = kwargs["cluster"], kwargs["topic"]
        self.loop = asyncio.get_running_loop()
        self.scan_stop = threading.Event()
        self.tail_stop = threading.Event()
        self.scanning = False
        self.tailing = False
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "scan_stop"):
            self.scan_stop.set()
            self.tail_stop.set()

    def _send_from_thread(self, message: dict[str, Any]) -> None:
        asyncio.run_coroutine_threadsafe(self.send_json(message), self.loop)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        action = content.get("action")
        params = content.get("params") or {}
        if not isinstance(params, dict):
            await self.send_json({"type": "error", "message": "'params' must be an object."})
            return
        params = {str(k): str(v) for k, v in params.items()}
        try:
            if action == "scan":
                await self._scan(params)
            elif action == "stop":
                self.scan_stop.set()
            elif action == "tail":
                await self._tail(params)
            elif action == "stop_tail":
                self.tail_stop.set()
            else:
                await self.send_json({"type": "error", "message": f"Unknown action '{str(action)[:40]}'."})
        except ConsoleError as exc:
            await self.send_json({"type": "error", "message": exc.message})

    async def _scan(self, params: dict[str, str]) -> None:
        if self.scanning:
            await self.send_json({"type": "error", "message": "A scan is already running: stop it first."})
            return
        req = browse.parse_request(self.topic, params)
        self.scan_stop = threading.Event()
        self.scanning = True
        stop = self.scan_stop

        def on_progress(p: ScanProgress) -> bool:
            self._send_from_thread({"type": "progress", **browse.progress_dict(p)})
            return not stop.is_set()

        def work() -> dict[str, Any]:
            records, progress = browse.run_scan(self.cluster, req, on_progress)
            rows = [browse.row(r, req.decode_key, req.decode_value) for r in records]
            earlier, later = browse.page_bounds(records, progress, req.spec.direction)
            return {"type": "result", "html": message_rows(rows), "count": len(rows), "earlier": earlier, "later": later,
                    "positions": browse.positions_param(progress), **browse.progress_dict(progress)}

        try:
            result = await sync_to_async(work, thread_sensitive=False)()
        finally:
            self.scanning = False
        await self.send_json(result)

    async def _tail(self, params: dict[str, str]) -> None:
        if self.tailing:
            return
        req = browse.parse_request(self.topic, params)
        self.tail_stop = threading.Event()
        self.tailing = True
        stop = self.tail_stop

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
                await self.send_json({"type": "error", "message": exc.message})
            finally:
                self.tailing = False
                await self.send_json({"type": "tail_stopped"})

        asyncio.ensure_future(run())
