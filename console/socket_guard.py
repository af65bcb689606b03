"""Websockets stay open only while their user may keep them open.

A socket's login is checked when it opens, again before every message it receives, and every
CONSOLE_WS_RECHECK_SECONDS while it is open (a tail or a live page sends without receiving): the
session is read again from the session store by the socket's session key, the user's row again
(is_active), and the consumer's own `still_allowed(user)`. A socket that fails is told why in a
sentence and closed (4401: signed out; 4403: no longer allowed), and its scans and tails stop.

The periodic check is one task per event loop for all the sockets of the process: every session
is read once, the users in one query, and each user's grants once per round (may() keeps them on
the user object), whatever the number of sockets. The same round refreshes the heartbeat of the
per-user slots the sockets hold (console/socket_limits.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import weakref
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.utils.crypto import constant_time_compare

from console import socket_limits
from console.batches import Batched
from console.sessions import expired

log = logging.getLogger(__name__)

CLOSE_SIGNED_OUT = 4401
CLOSE_NOT_ALLOWED = 4403
CLOSE_LIMIT = 4429  # (as HTTP's 429: too many for this user)
CLOSE_TRY_AGAIN = 1013  # (RFC 6455's "try again later": the page reconnects after a while)


@dataclass(frozen=True)
class Verdict:
    code: int
    message: str


SIGNED_OUT = Verdict(CLOSE_SIGNED_OUT, "Your session has ended (you logged out, or it expired): log in again to go on.")
DEACTIVATED = Verdict(CLOSE_NOT_ALLOWED, "Your account has been deactivated: this page gets no more updates.")
NOT_ALLOWED = Verdict(CLOSE_NOT_ALLOWED, "You may no longer see this: your access has changed. Reload the page.")
CHECK_UNAVAILABLE = Verdict(CLOSE_TRY_AGAIN, "Your login cannot be checked right now (the database does not answer): "
                                             "this page tries again by itself.")
NOT_ALLOWED_AT_OPEN = Verdict(CLOSE_NOT_ALLOWED, "You may not see this with your access: ask an admin for a role or binding that gives it.")


class GuardedConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """Base of the console's websocket consumers. A consumer implements `still_allowed(user)`
    (blocking: it runs in the database thread), calls `guard_open()` in connect() once its own
    checks pass (False: refused, already closed with the reason), and takes per-user slots for
    heavy work with `take_slot(kind)` / `free_slot(kind)`."""

    notice_type = "error"  # the message type under which the consumer's page shows a sentence
    # No channel of its own (an alias with no layer behind it: Channels' get_channel_layer gives None):
    # live pages take their broadcasts from the process's hub (console/live_hub.py) and the message
    # browser needs none. A channel per socket was a receive per socket through channels_redis'
    # per-process lock, held over from one event loop to the next (the tests' loops never closed).
    channel_layer_alias = "no channel of its own"
    _guard_id: str | None = None
    _guard_shut = False

    def still_allowed(self, user: Any) -> bool:
        raise NotImplementedError

    async def dispatch(self, message: dict[str, Any]) -> None:
        """As Channels', without closing old database connections before each message: that is a hop
        through the one database thread per message, which queued the pages of a restarted process
        behind each other there. These consumers reach the database only through
        database_sync_to_async (and the render thread), which close them around each call."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def guard_open(self) -> bool:
        user = self.scope["user"]
        session = self.scope.get("session")
        self._guard_user_id = user.pk
        # Sockets made in-process with a user and no session (tests) are checked on the user row alone.
        self._guard_has_session = session is not None
        self._guard_session_key: str | None = getattr(session, "session_key", None) if session is not None else None
        self._guard_held: set[str] = set()
        self._guard_id = uuid.uuid4().hex
        try:
            verdict = await _opening_check(self)
        except Exception:  # noqa: BLE001 - the database is away: the page is told, and tries again later
            log.warning("could not check the login of a websocket as it opened", exc_info=True)
            verdict = CHECK_UNAVAILABLE
        if verdict is NOT_ALLOWED:
            verdict = NOT_ALLOWED_AT_OPEN
        if verdict is None:
            refusal = await self.take_slot("sockets")
            if refusal is not None:
                verdict = Verdict(CLOSE_LIMIT, refusal)
        if verdict is not None:
            # Accepted only to say why: a socket refused before it opens reaches the page as a bare failure.
            await self.accept()
            await self._guard_close(verdict)
            return False
        _watch().add(self)
        return True

    async def take_slot(self, kind: str) -> str | None:
        """Take one of the user's slots of this kind; None when taken, else the sentence to show."""
        assert self._guard_id is not None, "guard_open() first"
        refusal = await _slots((kind, self._guard_user_id, self._guard_id))
        if refusal is None:
            self._guard_held.add(kind)
        return refusal

    async def free_slot(self, kind: str) -> None:
        if self._guard_id is not None and kind in self._guard_held:
            self._guard_held.discard(kind)
            await sync_to_async(socket_limits.release, thread_sensitive=False)(kind, self._guard_user_id, self._guard_id)

    async def websocket_receive(self, message: dict[str, Any]) -> None:
        if self._guard_shut:
            return
        if self._guard_id is not None:
            verdict = (await database_sync_to_async(_verdicts)([self])).get(self)
            if verdict is not None:
                await self._guard_close(verdict)
                return
        await super().websocket_receive(message)

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        try:
            await super().websocket_disconnect(message)
        finally:
            await self._guard_forget()

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        if not self._guard_shut:  # (nothing more after the closing sentence)
            await super().send(text_data, bytes_data, close)

    async def refuse_for_now(self, verdict: Verdict) -> None:
        """Close an accepted socket with the verdict's sentence, giving back what guard_open() took."""
        await self._guard_close(verdict)

    async def _guard_close(self, verdict: Verdict) -> None:
        if self._guard_shut:
            return
        try:
            await self.send_json({"type": self.notice_type, "message": verdict.message})
            self._guard_shut = True
            await self.close(code=verdict.code)
        except Exception:  # noqa: BLE001 - the client may be gone already; its work is stopped all the same
            log.debug("could not close a websocket", exc_info=True)
        self._guard_shut = True
        # The client's disconnect comes later, or never from a client that went away: the socket's work stops now.
        await self.disconnect(verdict.code)
        await self._guard_forget()

    async def _guard_forget(self) -> None:
        if self._guard_id is None:
            return
        _watch().discard(self)
        for kind in list(self._guard_held):
            await self.free_slot(kind)


def _session_data(session_key: str) -> dict[str, Any]:
    """The session as the store holds it now ({} when deleted, flushed or expired)."""
    engine = import_module(settings.SESSION_ENGINE)
    data: dict[str, Any] = engine.SessionStore(session_key=session_key).load()
    return data


def _session_is_users(data: dict[str, Any], user: Any) -> bool:
    """As django.contrib.auth.get_user decides it: the session names this user, with the hash of
    their current password (a changed password ends every other session), and has not expired."""
    if data.get(SESSION_KEY) != user._meta.pk.value_to_string(user):
        return False
    stored = data.get(HASH_SESSION_KEY)
    if hasattr(user, "get_session_auth_hash"):
        if not stored:
            return False
        hashes = [user.get_session_auth_hash()] + [user._get_session_auth_hash(secret=s) for s in settings.SECRET_KEY_FALLBACKS]
        if not any(constant_time_compare(stored, h) for h in hashes):
            return False
    return expired(data, time.time()) is None


def _verdicts(sockets: list[GuardedConsumer]) -> dict[GuardedConsumer, Verdict]:
    """The sockets that must close, with why (blocking: database and session store)."""
    keys = {s._guard_session_key for s in sockets if s._guard_has_session and s._guard_session_key}
    sessions = {k: _session_data(k) for k in keys}
    users = {u.pk: u for u in get_user_model()._default_manager.filter(pk__in={s._guard_user_id for s in sockets})}
    out: dict[GuardedConsumer, Verdict] = {}
    for s in sockets:
        user = users.get(s._guard_user_id)
        if s._guard_has_session:
            data = sessions.get(s._guard_session_key or "") or {}
            if user is None or not _session_is_users(data, user):
                out[s] = SIGNED_OUT
                continue
        if user is None or not user.is_active:
            out[s] = DEACTIVATED
            continue
        try:
            allowed = s.still_allowed(user)
        except Exception:  # noqa: BLE001 - a check that fails denies (deny by default)
            log.exception("the permission check of a websocket failed; closing it")
            allowed = False
        if not allowed:
            out[s] = NOT_ALLOWED
    return out


class _Watch:
    """The periodic check of the sockets of one event loop (a task that runs while there are any)."""

    def __init__(self) -> None:
        self.sockets: set[GuardedConsumer] = set()
        self.task: asyncio.Task[None] | None = None

    def add(self, socket: GuardedConsumer) -> None:
        self.sockets.add(socket)
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._run())

    def discard(self, socket: GuardedConsumer) -> None:
        self.sockets.discard(socket)
        if not self.sockets and self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
            self.task = None

    async def _run(self) -> None:
        while self.sockets:
            await asyncio.sleep(settings.CONSOLE_WS_RECHECK_SECONDS)
            await self.check()

    async def check(self) -> None:
        sockets = [s for s in self.sockets if not s._guard_shut]
        if not sockets:
            return
        try:
            verdicts = await database_sync_to_async(_verdicts)(sockets)
        except Exception:  # noqa: BLE001 - the database is away: the next round checks again
            log.warning("could not check the logins of %d websockets", len(sockets), exc_info=True)
            verdicts = {}
        for socket, verdict in verdicts.items():
            await socket._guard_close(verdict)
        held = [(kind, s._guard_user_id, s._guard_id) for s in self.sockets if s._guard_id for kind in s._guard_held]
        await sync_to_async(socket_limits.beat, thread_sensitive=False)(held)


def _opening_verdicts(sockets: list[GuardedConsumer]) -> list[Verdict | None]:
    verdicts = _verdicts(sockets)
    return [verdicts.get(s) for s in sockets]


# The checks of sockets as they open, made together (console/batches.py): checked one by one, the
# pages of a restarted web process queued behind each other in the one database thread, past the
# server's time for a handshake.
_opening_check: Batched[GuardedConsumer, Verdict | None] = Batched(_opening_verdicts)


# The slots of sockets opening together, taken in one round trip to Redis (console/batches.py).
_slots: Batched[tuple[str, object, str], str | None] = Batched(socket_limits.take_many, database=False)


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch] = weakref.WeakKeyDictionary()


def _watch() -> _Watch:
    loop = asyncio.get_running_loop()
    watch = _WATCHES.get(loop)
    if watch is None:
        watch = _WATCHES[loop] = _Watch()
    return watch
