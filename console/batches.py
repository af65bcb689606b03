"""Blocking work asked for by many coroutines of one event loop at once, done for all of them in one
call in the database thread (or, for work that needs no database, a thread of the pool).

A caller waits for its item's result; the items that come while a call runs wait for the next one,
which takes them all. So a burst of sockets opening together (the pages of a restarted web process)
costs a few calls, each reading what the items share once (a session, a user, their grants),
instead of one call each queued behind the others in the one database thread.

The calls run in a task of the event loop, which ends when nothing waits: cancelled (the loop
closing), it fails the callers still waiting instead of leaving them waiting for ever.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

T = TypeVar("T")
R = TypeVar("R")


class _Pending(Generic[T, R]):
    def __init__(self) -> None:
        self.waiting: list[tuple[T, asyncio.Future[R]]] = []
        self.task: asyncio.Task[None] | None = None


class Batched(Generic[T, R]):
    """`await batched(item)`: `work(items)` (blocking, one result per item, in order) for the items
    asked for together."""

    def __init__(self, work: Callable[[list[T]], Sequence[R]], database: bool = True) -> None:
        self.work = work
        self.database = database
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending[T, R]] = weakref.WeakKeyDictionary()

    async def __call__(self, item: T) -> R:
        loop = asyncio.get_running_loop()
        pending = self._loops.get(loop)
        if pending is None:
            pending = self._loops[loop] = _Pending()
        future: asyncio.Future[R] = loop.create_future()
        pending.waiting.append((item, future))
        if pending.task is None or pending.task.done():
            pending.task = loop.create_task(self._run(pending), name="batched calls")
        return await future

    async def _run(self, pending: _Pending[T, R]) -> None:
        batch: list[tuple[T, asyncio.Future[R]]] = []
        try:
            while pending.waiting:
                batch, pending.waiting = pending.waiting, []
                batch = [(item, future) for item, future in batch if not future.done()]  # (callers gone meanwhile)
                if not batch:
                    continue
                try:
                    run = database_sync_to_async(self.work) if self.database else sync_to_async(self.work, thread_sensitive=False)
                    results = await run([item for item, _ in batch])
                except Exception as exc:  # noqa: BLE001 - each caller gets it
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            for _, future in (*batch, *pending.waiting):
                if not future.done():
                    future.cancel()
