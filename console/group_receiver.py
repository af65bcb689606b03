"""A member of a Channels group that receives in a thread of its own, and hands each message to an
event loop of the process (console/live_hub.py: a web process's live pages of one cluster).

Received on the loop that also sends to every page, each message waited for the loop's turns
between the round trips of channels_redis' receive, so on a busy or starved process the broadcasts
queued up in Redis and the pages fell further behind with every one. In a thread of its own the
receive keeps up, and the loop takes whatever arrived meanwhile at once.

The thread joins the group, receives, and renews the membership before channels_redis lets it go
(group_expiry); when Redis fails it waits, joins again and goes on. Stopped, it leaves the group and
ends; it ends too when the loop it hands messages to has closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, cast

import redis
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

RETRY_MAX_SECONDS = 5.0  # the longest wait before joining again after Redis failed
LEAVE_SECONDS = 5.0  # the longest a stopping member waits for Redis to take it out of the group


class GroupReceiver:
    """`start()` joins `group` in the thread; `joined` (a future of `loop`) says whether it could, and
    `deliver(message)` is called on `loop` for each message from then on, in order."""

    def __init__(self, group: str, loop: asyncio.AbstractEventLoop, deliver: Callable[[dict[str, Any]], None]) -> None:
        self.group = group
        self.channel = f"live-hub.{uuid.uuid4().hex}"  # (no "!": received directly, not through the per-process lock)
        self.layer = get_channel_layer()
        self.joined: asyncio.Future[None] = loop.create_future()
        self._loop = loop
        self._deliver = deliver
        self._lock = threading.Lock()
        self._stopping = False
        self._own: tuple[asyncio.AbstractEventLoop, asyncio.Task[None]] | None = None
        self.thread = threading.Thread(target=self._main, name=f"group {group}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Leave the group and end the thread (from any thread; at once, without waiting for it)."""
        with self._lock:
            if self._stopping:  # (once: cancelled again, it would not finish leaving the group)
                return
            self._stopping = True
            own = self._own
        if own is not None:
            with contextlib.suppress(RuntimeError):  # (its loop has closed: the thread has ended)
                own[0].call_soon_threadsafe(own[1].cancel)

    def _main(self) -> None:
        asyncio.run(self._owned())  # (cancels what is left, channels_redis' pools closed with the loop)

    async def _owned(self) -> None:
        with self._lock:
            self._own = (asyncio.get_running_loop(), cast(asyncio.Task[None], asyncio.current_task()))
            if self._stopping:
                return
        with contextlib.suppress(asyncio.CancelledError):  # (stop(): the thread ends)
            await self._run()

    def _hand(self, call: Callable[..., Any], *args: Any) -> bool:
        """Run `call(*args)` on the loop the messages go to; False when that loop has closed."""
        try:
            self._loop.call_soon_threadsafe(call, *args)
        except RuntimeError:
            return False
        return True

    async def _run(self) -> None:
        try:
            await self.layer.group_add(self.group, self.channel)
        except Exception as exc:  # noqa: BLE001 - the waiting pages are told (Redis away)
            self._hand(_set_exception, self.joined, exc)
            return
        if not self._hand(_set_result, self.joined):
            return
        try:
            await self._receive()
        finally:
            try:
                await asyncio.wait_for(self.layer.group_discard(self.group, self.channel), LEAVE_SECONDS)
            except Exception:  # noqa: BLE001 - its membership ages out (group_expiry)
                log.warning("could not leave the group %s in Redis", self.group, exc_info=True)

    async def _receive(self) -> None:
        # The membership is renewed well within group_expiry, so a long-lived member stays in the group.
        renew = max(1.0, self.layer.group_expiry / 5)
        receiving: asyncio.Future[dict[str, Any]] | None = None
        failures, rejoin = 0, False
        try:
            while True:
                try:
                    if rejoin:
                        await self.layer.group_add(self.group, self.channel)
                        rejoin = False
                    if receiving is None:
                        receiving = asyncio.ensure_future(self.layer.receive(self.channel))
                    done, _ = await asyncio.wait({receiving}, timeout=renew)
                    if not done:
                        rejoin = True
                        continue
                    message, receiving = receiving.result(), None
                except Exception as exc:  # noqa: BLE001 - Redis away, or a message that could not be read: wait, join again
                    if receiving is not None and receiving.done():
                        receiving = None
                    failures += 1
                    if failures == 1:
                        log.warning("receiving the group %s failed (%s); joining again", self.group, exc,
                                    exc_info=not isinstance(exc, redis.RedisError | OSError))
                    rejoin = True
                    await asyncio.sleep(min(RETRY_MAX_SECONDS, 0.5 * failures))
                    continue
                if failures:
                    log.warning("receiving the group %s again after %d failures", self.group, failures)
                    failures = 0
                if not self._hand(self._deliver, message):
                    return
        finally:
            if receiving is not None:
                receiving.cancel()


def _set_result(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _set_exception(future: asyncio.Future[None], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
        future.exception()  # (retrieved: pages that went away meanwhile do not make it "never retrieved")
