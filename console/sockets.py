"""One websocket per page: the watcher's updates, turned into the page's own fragments.

The consumer never asks Kafka: it re-renders from the snapshot in Redis, which the process
parses once per change, so fifty open tabs cost Kafka nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl

import redis
from asgiref.sync import sync_to_async
from django.db import close_old_connections

from console import error_responses, gateway, live
from console.access import event_visible
from console.auth import access_for, may, viewing
from console.errors import ConsoleError
from console.realtime import cluster_group
from console.socket_guard import CLOSE_TRY_AGAIN, GuardedConsumer, Verdict

log = logging.getLogger(__name__)

LIVE_UNAVAILABLE = Verdict(CLOSE_TRY_AGAIN, "Live updates are unavailable for now (Redis cannot be reached): this page "
                                            "tries again by itself and shows the last state it received meanwhile.")


# The live fragments are drawn in a thread of their own, not sync_to_async's one thread: Channels
# closes old database connections in that thread before every message it hands any socket of the
# process, so a long redraw there (a large cluster's) would hold every socket's messages back.
_T = TypeVar("_T")
_RENDERER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="live-fragments")


# The last fragments drawn for each shared view (live.SHARED), cluster and params, with what they
# were drawn from: the sockets of a process showing the same page get one drawing per version, so
# the one render thread's work per version does not grow with the number of open tabs. Only the
# render thread reads and writes it.
_DRAWN: dict[tuple[live.Fragment, str, tuple[tuple[str, str], ...], tuple[Any, ...]],
             tuple[tuple[Any, ...], tuple[int | None, dict[str, str]]]] = {}
DRAWN_KEPT = 256


def _drawn_from(state: Any) -> tuple[Any, ...]:
    """What a shared fragment is drawn from: the snapshot (the object and its version: a reading
    process keeps one object per version) and what changes in it between versions (the stamp's
    quorum), and the store's fault."""
    snap = getattr(state, "snapshot", None)
    return (id(snap), getattr(snap, "version", None), getattr(snap, "quorum", None), getattr(snap, "quorum_error", None),
            getattr(state, "store_error", None))


def _rendered(draw: Callable[[], _T]) -> _T:
    close_old_connections()  # (as Django does around a request: a long-lived thread's connection may have gone stale)
    try:
        return draw()
    finally:
        close_old_connections()


class LiveConsumer(GuardedConsumer):
    notice_type = "notice"  # (console.js shows it in the page's banner)
    cluster: str
    view: str
    params: dict[str, str]
    _drawing: asyncio.Future[None] | None = None  # (the redraw running, see _redraw)
    _again = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.cluster = self.scope["url_route"]["kwargs"]["cluster"]
        self.params = dict(parse_qsl(self.scope.get("query_string", b"").decode()))
        self.view = self.params.pop("view", "overview")
        try:
            gateway.cluster_config(self.cluster)
            if self.view not in live.VIEWS:
                raise ConsoleError(f"unknown view '{self.view}'")
            events = live.events_view()
            self.filters = events.filters(self.params) if self.view == "events" and events is not None else {}
        except ConsoleError:
            await self.close(code=4404)
            return
        if not await self.guard_open():
            return
        try:
            await self.channel_layer.group_add(cluster_group(self.cluster), self.channel_name)
        except (redis.RedisError, OSError):
            # Redis is away (or every connection stayed busy past the pool's wait): the page is told
            # so and tries again later (console.js reconnects on any code but 4401 and 4403).
            log.warning("could not join the live updates of %s in Redis", self.cluster, exc_info=True)
            await self.accept()
            await self.refuse_for_now(LIVE_UNAVAILABLE)
            return
        await self.accept()

    def still_allowed(self, user: Any) -> bool:
        # The user as read again by this check draws the socket's lists, so a narrowed scope cuts them too.
        self.viewer = user
        topic = self.params.get("topic") if self.view == "topic" else None
        group = self.params.get("group") if self.view == "group" else None
        return may(user, live.VIEW_ACTIONS.get(self.view, "cluster.view"), cluster=self.cluster, topic=topic, group=group)

    def _names_key(self) -> tuple[Any, ...]:
        """What the socket's user may see of the cluster's names: sockets alike share drawings."""
        viewer = getattr(self, "viewer", None) or self.scope["user"]
        access = access_for(viewer)
        return tuple(getattr(access.names(a, self.cluster, of), "key", None)
                     for a, of in (("topic.view", "topics"), ("group.view", "groups")))

    async def disconnect(self, code: int) -> None:
        drawing = getattr(self, "_drawing", None)
        if drawing is not None:
            drawing.cancel()
        if hasattr(self, "cluster"):
            try:
                await self.channel_layer.group_discard(cluster_group(self.cluster), self.channel_name)
            except (redis.RedisError, OSError):  # (the group's members age out: channels_redis's group_expiry)
                log.warning("could not leave the live updates of %s in Redis", self.cluster, exc_info=True)

    async def cluster_update(self, message: dict[str, Any]) -> None:
        """Sent by the watcher after every cycle; `changed` says whether the content moved."""
        await self.send_json(
            {
                "type": "status",
                "reachable": message["reachable"],
                "error": message["error"],
                "cause": message.get("cause"),
                "taken_at": message["taken_at"],
                "checked_at": message["checked_at"],
                "version": message["version"],
                "sent_at": message.get("sent_at"),
            }
        )
        if self.view == "events":
            await self._prepend_events(message["events"])
        elif self.view in live.FRAGMENTS and (message["changed"] or (self.view == "overview" and message.get("quorum_changed"))):
            self._redraw()

    def _redraw(self) -> None:
        """Redraw the view's fragments from the latest snapshot, beside the socket's messages: a
        broadcast that comes while a redraw runs asks for one more after it, however many come
        (the next one reads the latest version anyway). Redrawn once per broadcast in turn, a page
        would fall further behind with every broadcast whenever a redraw takes longer than the time
        between two."""
        if self._drawing is not None and not self._drawing.done():
            self._again = True
            return
        self._drawing = asyncio.ensure_future(self._draw())

    async def _draw(self) -> None:
        try:
            again = True
            while again:
                self._again = False
                await self._send_fragments(live.FRAGMENTS[self.view], shared=self.view in live.SHARED)
                again = self._again
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the socket stays open; the next broadcast redraws
            log.exception("redrawing the %s view of %s failed", self.view, self.cluster)

    async def reassignment_progress(self, message: dict[str, Any]) -> None:
        """Sent by a reassignment job after every step: the job page redraws its progress."""
        await self._on_message("reassignment.progress", message)

    async def analytics_progress(self, message: dict[str, Any]) -> None:
        """Sent by an analytics run at each stage: the analytics page redraws its list of runs."""
        await self._on_message("analytics.progress", message)

    async def events_added(self, message: dict[str, Any]) -> None:
        """Events raised outside the watcher (the balance watch): the events page prepends them."""
        if self.view == "events":
            await self._prepend_events(message["events"])

    async def _on_message(self, message_type: str, message: dict[str, Any]) -> None:
        handler = live.ON_MESSAGE.get(message_type)
        if handler is not None and self.view == handler.view and handler.wants(self.params, message):
            await self._send_fragments(handler.fragment)

    async def _prepend_events(self, events: list[dict[str, Any]]) -> None:
        view = live.events_view()
        if view is None:
            return
        viewer = getattr(self, "viewer", None) or self.scope["user"]
        access = await sync_to_async(access_for)(viewer)
        topics, groups = access.names("topic.view", self.cluster, "topics"), access.names("group.view", self.cluster, "groups")
        matching = [e for e in events if view.matches(e, **self.filters) and event_visible(e, topics, groups)]
        if matching:
            html = await sync_to_async(view.rows)(matching)
            await self.send_json({"type": "prepend", "target": "event-rows", "html": html, "count": len(matching)})

    async def _send_fragments(self, fragment: live.Fragment, shared: bool = False) -> None:
        """Draw the fragments (in the render thread) and send them; `shared`: the same view, cluster
        and params drawn from the same snapshot by another socket of the process are sent as drawn."""
        viewer = getattr(self, "viewer", None) or self.scope["user"]

        def draw() -> tuple[int | None, dict[str, str]]:
            viewing(viewer)  # (the render thread's lists are cut to what this socket's user may see)
            state = live.live_state(self.cluster)
            key = (fragment, self.cluster, tuple(sorted(self.params.items())), self._names_key())
            source = _drawn_from(state) if shared else None
            held = _DRAWN.get(key) if shared else None
            if held is not None and held[0] == source:
                return held[1]
            drawn = getattr(getattr(state, "snapshot", None), "version", None), fragment(state, self.params)
            if shared:
                if len(_DRAWN) >= DRAWN_KEPT:
                    _DRAWN.clear()
                _DRAWN[key] = (cast(tuple[Any, ...], source), drawn)
            return drawn

        try:
            version, fragments = await asyncio.get_running_loop().run_in_executor(_RENDERER, _rendered, draw)
        except ConsoleError as exc:
            await self.send_json(error_responses.socket_error(exc, self.notice_type))
            return
        for target, html in fragments.items():  # (version: the snapshot's drawn, None when there is none)
            await self.send_json({"type": "fragment", "target": target, "html": html, "version": version})
