"""Real receivers for alert notifications, started by the tests (and the bench): an HTTP server that
records every request and answers with the statuses it is told, and an SMTP server (aiosmtpd)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() when it arrived

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # answered in turn; then 200
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait(self, count: int, timeout: float = 10.0) -> list[Received]:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"{len(self.requests)} requests arrived within {timeout} s, not {count}")
            return list(self.requests)


@contextmanager
def http_receiver() -> Iterator[HttpReceiver]:
    receiver = HttpReceiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with receiver.arrived:
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()))
                receiver.arrived.notify_all()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            if 300 <= status < 400:
                self.send_header("Location", "/moved")
            self.end_headers()
            self.wfile.write(b"ok" if status < 300 else b"receiver says no")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class MailReceiver:
    port: int
    messages: list[EmailMessage] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's name
        message = message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
        with self.arrived:
            self.messages.append(message)  # type: ignore[arg-type]
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
            self.arrived.notify_all()
        return "250 Message accepted for delivery"

    def wait(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.messages) >= count, timeout):
                raise AssertionError(f"{len(self.messages)} messages arrived within {timeout} s, not {count}")
            return list(self.messages)


@contextmanager
def mail_receiver(port: int) -> Iterator[MailReceiver]:
    from aiosmtpd.controller import Controller

    receiver = MailReceiver(port)
    controller = Controller(receiver, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield receiver
    finally:
        controller.stop()
