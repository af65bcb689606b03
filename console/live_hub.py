"""One member of a cluster's Channels group per web process (per event loop), shared by every live
page the process serves.

When each page's socket joined the group itself, a reconnect storm was a Redis call per page, and
every broadcast reached the process as one delivery per page, handed from socket to socket through
channels_redis' receive lock, each page encoding the same status and fragments again. The process's
hub for a cluster is the group's one member instead: it receives each broadcast once, encodes its
status once, draws each live fragment once per view, params and names its viewer may see
(live.SHARED) in one call of the render thread, and gives the texts to every page showing them.

Each page keeps its own access check (console/socket_guard.py closes a socket whose user may no
longer see it; its drawings are cut to the names its user may see) and its own outbox: a page that
does not keep up gets the latest status and fragments instead of a queue of old ones, and never
holds the others back.

The hub receives in a thread of its own (console/group_receiver.py), which joins again by itself
when Redis failed, the pages staying open meanwhile (their status ages, and console.js shows that);
the hub's task takes whatever arrived at each turn, so a process that fell behind sends the latest
status and one redraw, not the backlog. The task ends with the hub's last page, or is cancelled with
its event loop, and stops the receiver on its way out.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from django.db import close_old_connections

from console import error_responses, live
from console.auth import access_for, viewing
from console.errors import ConsoleError
from console.group_receiver import GroupReceiver
from console.realtime import cluster_group

log = logging.getLogger(__name__)

_T = TypeVar("_T")
Sendable = str | Callable[[], Awaitable[None]]

# The live fragments are drawn in a thread of their own, not sync_to_async's one thread: a long
# redraw there (a large cluster's) would hold back every socket's login and access checks.
_RENDERER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="live-fragments")

# The last messages drawn for each shared view, cluster, params and visible names, with what they
# were drawn from: a round that finds the snapshot unchanged sends them as drawn. Only the render
# thread reads and writes it.
_DRAWN: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[tuple[str, str]]]] = {}
DRAWN_KEPT = 256


def _rendered(draw: Callable[[], _T]) -> _T:
    close_old_connections()  # (as Django does around a request: a long-lived thread's connection may have gone stale)
    try:
        return draw()
    finally:
        close_old_connections()


async def in_render_thread(draw: Callable[[], _T]) -> _T:
    return await asyncio.get_running_loop().run_in_executor(_RENDERER, _rendered, draw)


class Outbox:
    """A page's messages waiting to be sent, sent in order by a task of the page's own. A message put
    under a key takes the place of the one waiting under it (a newer status, a newer drawing of a
    fragment); keyless ones (texts or coroutine functions) are all sent. Nothing is sent before
    `open()` (the socket's accept goes first)."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._send = send
        self._waiting: dict[Hashable, Sendable] = {}
        self._numbers = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self._open = False

    def put(self, item: Sendable, key: Hashable | None = None) -> None:
        self._waiting[next(self._numbers) if key is None else key] = item
        self._start()

    def open(self) -> None:
        self._open = True
        self._start()

    def close(self) -> None:
        self._open = False
        self._waiting.clear()
        if self._task is not None:
            self._task.cancel()

    def _start(self) -> None:
        if self._open and self._waiting and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._waiting and self._open:
            item = self._waiting.pop(next(iter(self._waiting)))
            if isinstance(item, str):
                try:
                    await self._send(item)
                except Exception:  # noqa: BLE001 - the client went away meanwhile: its disconnect follows
                    log.debug("a live page's message was not sent", exc_info=True)
                continue
            try:
                await item()
            except Exception:  # noqa: BLE001 - the page goes on; the next broadcast brings it up to date
                log.exception("a live page's update failed")


class Page(Protocol):
    """What the hub needs of a live page's socket (console.sockets.LiveConsumer)."""

    cluster: str
    view: str
    params: dict[str, str]
    notice_type: str
    outbox: Outbox

    def drawn_for(self) -> Any: ...  # the user whose lists the page's fragments are cut to

    async def prepend_events(self, events: list[dict[str, Any]]) -> None: ...

    async def on_broadcast(self, message: dict[str, Any]) -> None: ...  # a broadcast but the watcher's cluster.update


def names_key(user: Any, cluster: str) -> tuple[Any, ...]:
    """What the user may see of the cluster's names: pages alike share drawings (blocking: grants)."""
    access = access_for(user)
    return tuple(getattr(access.names(a, cluster, of), "key", None) for a, of in (("topic.view", "topics"), ("group.view", "groups")))


def messages(fragments: Mapping[str, str], version: int | None) -> list[tuple[str, str]]:
    """(target, text) of each fragment drawn, encoded once for every page that sends it."""
    return [(target, json.dumps({"type": "fragment", "target": target, "html": html, "version": version}))
            for target, html in fragments.items()]


def _drawn_from(state: Any) -> tuple[Any, ...]:
    """What a shared fragment is drawn from: the snapshot (the object and its version: a reading
    process keeps one object per version) and what changes in it between versions (the stamp's
    quorum), and the store's fault."""
    snap = getattr(state, "snapshot", None)
    return (id(snap), getattr(snap, "version", None), getattr(snap, "quorum", None), getattr(snap, "quorum_error", None),
            getattr(state, "store_error", None))


def _draw(cluster: str, pages: list[Page]) -> list[tuple[Page, list[tuple[str | None, str]]]]:
    """Each page's fragment messages from one read of the cluster (blocking: the render thread)."""
    state = live.live_state(cluster)
    version = getattr(getattr(state, "snapshot", None), "version", None)
    source = _drawn_from(state)
    out: list[tuple[Page, list[tuple[str | None, str]]]] = []
    for page in pages:
        user = page.drawn_for()
        viewing(user)  # (the render thread's lists are cut to what this page's user may see)
        fragment = live.FRAGMENTS[page.view]
        drawn: list[tuple[str | None, str]]
        try:
            if page.view not in live.SHARED:
                drawn = list(messages(fragment(state, page.params), version))
            else:
                key = (page.view, cluster, tuple(sorted(page.params.items())), names_key(user, cluster))
                held = _DRAWN.get(key)
                if held is None or held[0] != source:
                    if len(_DRAWN) >= DRAWN_KEPT:
                        _DRAWN.clear()
                    held = _DRAWN[key] = (source, messages(fragment(state, page.params), version))
                drawn = list(held[1])
        except ConsoleError as exc:
            drawn = [(None, json.dumps(error_responses.socket_error(exc, page.notice_type)))]
        except Exception:  # noqa: BLE001 - that page misses this version; the next broadcast redraws it
            log.exception("redrawing the %s view of %s failed", page.view, cluster)
            drawn = []
        out.append((page, drawn))
    return out


class Hub:
    """The group's one member for the pages of one cluster on one event loop: a GroupReceiver gets
    the broadcasts in its thread, and the hub's task hands them to the pages."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.pages: set[Page] = set()
        self._to_draw: set[Page] = set()
        self._drawing: asyncio.Task[None] | None = None
        self._arrived: list[dict[str, Any]] = []
        self._arrival = asyncio.Event()
        loop = asyncio.get_running_loop()
        self.receiver = GroupReceiver(cluster_group(cluster), loop, self._arrive)
        self.joined = self.receiver.joined
        self.task = loop.create_task(self._run(), name=f"live hub of {cluster}")
        self.receiver.start()

    def _arrive(self, message: dict[str, Any]) -> None:
        self._arrived.append(message)
        self._arrival.set()

    async def _run(self) -> None:
        try:
            while True:
                await self._arrival.wait()
                self._arrival.clear()
                arrived, self._arrived = self._arrived, []
                try:
                    self._fan_out(arrived)
                except Exception:  # noqa: BLE001 - those broadcasts are lost; the next ones go out
                    log.exception("handing broadcasts to the live pages of %s failed", self.cluster)
        finally:
            self.stop()

    def _fan_out(self, arrived: list[dict[str, Any]]) -> None:
        """Hand what arrived since the last turn to the pages. Of several cluster.updates (a process
        that fell behind) the pages get every event, but only the latest status and one redraw:
        drawn from the latest snapshot anyway, the older ones would only be later still."""
        pages = list(self.pages)
        updates = [m for m in arrived if m.get("type") == "cluster.update"]
        if updates:
            latest = updates[-1]
            status = json.dumps({
                "type": "status", "reachable": latest["reachable"], "error": latest["error"], "cause": latest.get("cause"),
                "taken_at": latest["taken_at"], "checked_at": latest["checked_at"], "version": latest["version"],
                "sent_at": latest.get("sent_at"),
            })
            for page in pages:
                page.outbox.put(status, "status")
        for message in arrived:
            kind = message.get("type")
            if kind == "cluster.update":
                view, handler, arg = "events", "prepend_events", message.get("events")
                if not arg:
                    continue
            else:
                on_message = live.ON_MESSAGE.get(str(kind))
                view = "events" if kind == "events.added" else on_message.view if on_message is not None else ""
                handler, arg = "on_broadcast", message
            for page in pages:
                if page.view == view:
                    page.outbox.put(_later(getattr(page, handler), arg))
        changed = any(m["changed"] for m in updates)
        quorum_changed = any(m.get("quorum_changed") for m in updates)
        redraw = [p for p in pages if p.view in live.FRAGMENTS and (changed or (p.view == "overview" and quorum_changed))]
        if redraw:
            self.redraw(redraw)

    def redraw(self, pages: Iterable[Page]) -> None:
        """Draw the pages' fragments from the latest snapshot, beside the hub's task: broadcasts that
        come while a round runs ask for one more after it, however many come (it reads the latest
        version anyway). A round per broadcast in turn fell further behind with every broadcast
        whenever drawing took longer than the time between two."""
        self._to_draw.update(pages)
        if self._drawing is None or self._drawing.done():
            self._drawing = asyncio.get_running_loop().create_task(self._draw_rounds())

    async def _draw_rounds(self) -> None:
        while self._to_draw:
            pages = [p for p in self._to_draw if p in self.pages]
            self._to_draw = set()
            try:
                drawn = await in_render_thread(functools.partial(_draw, self.cluster, pages))
            except Exception:  # noqa: BLE001 - the pages keep the last drawing; the next broadcast redraws
                log.exception("redrawing the live pages of %s failed", self.cluster)
                continue
            for page, texts in drawn:
                if page in self.pages:
                    for target, text in texts:
                        page.outbox.put(text, None if target is None else ("fragment", target))

    def stop(self) -> None:
        """End the hub: its task, its drawing, and its receiver (which leaves the group)."""
        _forget(self)
        self.receiver.stop()
        if self._drawing is not None:
            self._drawing.cancel()
        if self.task is not asyncio.current_task():
            self.task.cancel()


def _later(handler: Callable[[Any], Awaitable[None]], arg: Any) -> Callable[[], Awaitable[None]]:
    """`handler(arg)`, called when the page's outbox comes to it."""
    return lambda: handler(arg)


_HUBS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Hub]] = weakref.WeakKeyDictionary()


def _hubs() -> dict[str, Hub]:
    return _HUBS.setdefault(asyncio.get_running_loop(), {})


def _forget(hub: Hub) -> None:
    hubs = _HUBS.get(hub.task.get_loop())
    if hubs is not None and hubs.get(hub.cluster) is hub:
        del hubs[hub.cluster]


def hub_of(cluster: str) -> Hub | None:
    """The running loop's hub for the cluster, if a page has one."""
    return _hubs().get(cluster)


async def join(page: Page) -> None:
    """The page gets the cluster's broadcasts from now on. Raises what Redis raised when the hub
    cannot join the group (redis.RedisError, OSError): the page is then not joined."""
    hubs = _hubs()
    hub = hubs.get(page.cluster)
    if hub is None:
        hub = hubs[page.cluster] = Hub(page.cluster)
    hub.pages.add(page)
    try:
        await asyncio.shield(hub.joined)  # (one page going away does not cancel the others' wait)
    except BaseException:
        leave(page)
        raise


def leave(page: Page) -> None:
    """The page gets no more broadcasts; the hub's last page ends the hub (its receiver leaves the group)."""
    hub = _hubs().get(page.cluster)
    if hub is None or page not in hub.pages:
        return
    hub.pages.discard(page)
    hub._to_draw.discard(page)
    if not hub.pages:
        hub.stop()
