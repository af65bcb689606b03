"""What each page's websocket pushes, registered by the apps from AppConfig.ready() (console/
imports no app): the views a page may open, the fragments re-rendered when the cluster's snapshot
changes, the events list's filtering and rows, and fragments redrawn on other messages (a
reassignment job's progress, an analytics run's stages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from console import snapshots

Fragment = Callable[[Any, Mapping[str, str]], dict[str, str]]  # (the cluster's live state, page params) -> {target: html}


@dataclass(frozen=True)
class EventsView:
    filters: Callable[[Mapping[str, str]], dict[str, Any]]  # page params -> filters (ConsoleError when bad)
    matches: Callable[..., bool]  # (event dict, **filters) -> shown on that page
    rows: Callable[[list[dict[str, Any]]], str]  # event dicts -> table rows


@dataclass(frozen=True)
class OnMessage:
    """A fragment redrawn when a message of this type reaches a page of `view` (and `wants` it)."""

    view: str
    fragment: Fragment
    wants: Callable[[Mapping[str, str], Mapping[str, Any]], bool] = lambda params, message: True


FRAGMENTS: dict[str, Fragment] = {}
# Views whose fragments are drawn from the snapshot and the page's params alone (no user, nothing
# else read): a process draws each once per version and params, whatever number of sockets show it
# (console.sockets.LiveConsumer).
SHARED: set[str] = set()
VIEWS: set[str] = {"status"}  # "status": only the cluster status, no fragments
ON_MESSAGE: dict[str, OnMessage] = {}
# The action a page's socket needs (console.access.ACTIONS), per view: cluster.view unless registered.
VIEW_ACTIONS: dict[str, str] = {}
_events: list[EventsView] = []


def register_fragment(view: str, fragment: Fragment, shared: bool = False, action: str = "cluster.view") -> None:
    """`shared`: drawn from the snapshot, the params and the names the user may see alone (SHARED)."""
    FRAGMENTS[view] = fragment
    VIEWS.add(view)
    VIEW_ACTIONS[view] = action
    if shared:
        SHARED.add(view)


def register_view(view: str, action: str = "cluster.view") -> None:
    """A view with live status but no fragments of its own (or ones redrawn on messages)."""
    VIEWS.add(view)
    VIEW_ACTIONS[view] = action


def register_events(view: EventsView) -> None:
    _events[:] = [view]
    VIEWS.add("events")


def register_on_message(message_type: str, handler: OnMessage, action: str = "cluster.view") -> None:
    ON_MESSAGE[message_type] = handler
    VIEWS.add(handler.view)
    VIEW_ACTIONS.setdefault(handler.view, action)


def live_state(cluster: str) -> snapshots.Live:
    """A cluster's live state for rendering: the snapshot without waiting for the console's own
    changes (pushes follow the watcher)."""
    return snapshots.watched(cluster)


def events_view() -> EventsView | None:
    return _events[0] if _events else None
