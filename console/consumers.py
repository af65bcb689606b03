"""One websocket per page: the watcher's updates, turned into the page's own fragments.

The consumer never asks Kafka: it re-renders from the snapshot in Redis, which the process
parses once per change, so fifty open tabs cost Kafka nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from brokers_app import services
from brokers_app.views import event_filters, event_rows, job_fragment, overview_fragment
from console import gateway
from console.errors import ConsoleError
from console.realtime import cluster_group
from consumers_app.views import detail_fragment as group_fragment
from consumers_app.views import groups_fragment
from topics_app.views import at_risk_fragment, detail_fragment, layout_fragment, topics_fragment

log = logging.getLogger(__name__)

FRAGMENTS: dict[str, Callable[[services.Live, Mapping[str, str]], dict[str, str]]] = {
    "overview": overview_fragment,
    "layout": layout_fragment,
    "at_risk": at_risk_fragment,
    "topics": topics_fragment,
    "topic": detail_fragment,
    "groups": groups_fragment,
    "group": group_fragment,
}
VIEWS = set(FRAGMENTS) | {"events", "status", "reassignment", "reassignments", "analytics", "reports"}  # "status": only the cluster status, no fragments


class LiveConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    cluster: str
    view: str
    params: dict[str, str]

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
            if self.view not in VIEWS:
                raise ConsoleError(f"unknown view '{self.view}'")
            self.filters = event_filters(self.params) if self.view == "events" else {}
        except ConsoleError:
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(cluster_group(self.cluster), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "cluster"):
            await self.channel_layer.group_discard(cluster_group(self.cluster), self.channel_name)

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
            }
        )
        if self.view == "events":
            matching = [e for e in message["events"] if services.event_matches(e, **self.filters)]
            if matching:
                html = await sync_to_async(event_rows)(matching)
                await self.send_json({"type": "prepend", "target": "event-rows", "html": html, "count": len(matching)})
        elif self.view in FRAGMENTS and (message["changed"] or (self.view == "overview" and message.get("quorum_changed"))):
            try:
                fragments = await sync_to_async(self._render)()
            except ConsoleError as exc:
                await self.send_json({"type": "notice", "message": exc.message})
                return
            for target, html in fragments.items():
                await self.send_json({"type": "fragment", "target": target, "html": html})

    async def reassignment_progress(self, message: dict[str, Any]) -> None:
        """Sent by a reassignment job after every step: the job page redraws its progress."""
        if self.view != "reassignment" or self.params.get("job") != str(message["job"]):
            return
        try:
            fragments = await sync_to_async(job_fragment)(services.live(self.cluster, fresh=False), self.params)
        except ConsoleError as exc:
            await self.send_json({"type": "notice", "message": exc.message})
            return
        for target, html in fragments.items():
            await self.send_json({"type": "fragment", "target": target, "html": html})

    async def analytics_progress(self, message: dict[str, Any]) -> None:
        """Sent by an analytics run at each stage: the analytics page redraws its list of runs."""
        if self.view != "analytics":
            return
        from analytics.views import runs_fragment

        fragments = await sync_to_async(runs_fragment)(services.live(self.cluster, fresh=False), self.params)
        for target, html in fragments.items():
            await self.send_json({"type": "fragment", "target": target, "html": html})

    async def events_added(self, message: dict[str, Any]) -> None:
        """Events raised outside the watcher (the balance watch): the events page prepends them."""
        if self.view != "events":
            return
        matching = [e for e in message["events"] if services.event_matches(e, **self.filters)]
        if matching:
            html = await sync_to_async(event_rows)(matching)
            await self.send_json({"type": "prepend", "target": "event-rows", "html": html, "count": len(matching)})

    def _render(self) -> dict[str, str]:
        return FRAGMENTS[self.view](services.live(self.cluster, fresh=False), self.params)
