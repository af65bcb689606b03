"""One websocket per page: the watcher's updates, turned into the page's own fragments.

The consumer never asks Kafka: the process's hub for the cluster (console/live_hub.py) receives
each broadcast once and draws from the snapshot in Redis, which the process parses once per change,
so open tabs cost Kafka nothing, and the web process one drawing per view and version.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

from channels.db import database_sync_to_async

from console import error_responses, gateway, live, live_hub
from console.access import event_visible
from console.auth import access_for, may, viewing
from console.errors import ConsoleError
from console.socket_guard import CLOSE_TRY_AGAIN, GuardedConsumer, Verdict

log = logging.getLogger(__name__)

LIVE_UNAVAILABLE = Verdict(CLOSE_TRY_AGAIN, "Live updates are unavailable for now (Redis cannot be reached): this page "
                                            "tries again by itself and shows the last state it received meanwhile.")


class LiveConsumer(GuardedConsumer):
    notice_type = "notice"  # (console.js shows it in the page's banner)
    cluster: str
    view: str
    params: dict[str, str]
    outbox: live_hub.Outbox
    _joined = False

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
        self.outbox = live_hub.Outbox(self._send_text)
        try:
            await live_hub.join(self)
        except Exception:  # noqa: BLE001 - Redis is away (or every connection stayed busy past the pool's wait)
            # The page is told so and tries again later (console.js reconnects on any code but 4401 and 4403).
            log.warning("could not join the live updates of %s in Redis", self.cluster, exc_info=True)
            await self.accept()
            await self.refuse_for_now(LIVE_UNAVAILABLE)
            return
        self._joined = True
        await self.accept()
        self.outbox.open()

    async def _send_text(self, text: str) -> None:
        await self.send(text_data=text)

    def drawn_for(self) -> Any:
        """The user whose lists the page's fragments are cut to: as read again by the latest access
        check (still_allowed), so a narrowed scope cuts them too."""
        return getattr(self, "viewer", None) or self.scope["user"]

    def still_allowed(self, user: Any) -> bool:
        self.viewer = user
        topic = self.params.get("topic") if self.view == "topic" else None
        group = self.params.get("group") if self.view == "group" else None
        return may(user, live.VIEW_ACTIONS.get(self.view, "cluster.view"), cluster=self.cluster, topic=topic, group=group)

    async def disconnect(self, code: int) -> None:
        outbox = getattr(self, "outbox", None)
        if outbox is not None:
            outbox.close()
        if self._joined:
            self._joined = False
            live_hub.leave(self)

    async def on_broadcast(self, message: dict[str, Any]) -> None:
        """A broadcast other than the watcher's cluster.update (console/live_hub.py sends those): events
        raised outside the watcher (the balance watch) and the messages apps redraw fragments on (a
        reassignment job's steps, an analytics run's stages)."""
        kind = message.get("type")
        if kind == "events.added":
            if self.view == "events":
                await self.prepend_events(message["events"])
            return
        handler = live.ON_MESSAGE.get(str(kind))
        if handler is not None and self.view == handler.view and handler.wants(self.params, message):
            await self._send_fragments(handler.fragment)

    async def prepend_events(self, events: list[dict[str, Any]]) -> None:
        view = live.events_view()
        if view is None:
            return
        access = await database_sync_to_async(access_for)(self.drawn_for())
        topics, groups = access.names("topic.view", self.cluster, "topics"), access.names("group.view", self.cluster, "groups")
        matching = [e for e in events if view.matches(e, **self.filters) and event_visible(e, topics, groups)]
        if matching:
            html = await database_sync_to_async(view.rows)(matching)
            await self.send_json({"type": "prepend", "target": "event-rows", "html": html, "count": len(matching)})

    async def _send_fragments(self, fragment: live.Fragment) -> None:
        """Draw this page's fragments (in the render thread) and send them."""
        viewer = self.drawn_for()

        def draw() -> list[tuple[str, str]]:
            viewing(viewer)  # (the render thread's lists are cut to what this socket's user may see)
            state = live.live_state(self.cluster)
            return live_hub.messages(fragment(state, self.params), getattr(getattr(state, "snapshot", None), "version", None))

        try:
            drawn = await live_hub.in_render_thread(draw)
        except ConsoleError as exc:
            await self.send_json(error_responses.socket_error(exc, self.notice_type))
            return
        for _, text in drawn:
            await self.send(text_data=text)
