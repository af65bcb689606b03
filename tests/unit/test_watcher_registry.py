"""console/ imports no app (but its URL and websocket routes): the apps register their part from AppConfig.ready()."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

APPS = ("brokers_app", "consumers_app", "topics_app", "analytics", "connect_app")


def test_console_imports_no_app_but_from_its_url_and_websocket_routes():
    found = []
    for path in sorted((ROOT / "console").rglob("*.py")):
        if path.name in ("urls.py", "routing.py") and path.parent.name == "console" or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(Path(path).read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in APPS]
    assert found == []


def test_the_apps_register_their_parts_when_django_starts():
    from analytics.sampling import SampleWriter
    from brokers_app.watching import EventTable
    from connect_app import restarts, state
    from console.watcher import registry
    from consumers_app.group_evaluation import GroupEvaluation

    assert isinstance(registry.events(), EventTable)
    assert isinstance(registry.group_evaluator("c", True, lambda rows: None), GroupEvaluation)
    assert isinstance(registry.sample_writer("c", object()), SampleWriter)
    from topics_app import tiered_watch
    from transactions_app import watch

    assert registry.side_watches() == {"connect": state.watch, "connect_restarts": restarts.watch, "transactions": watch.watch,
                                       "tiered": tiered_watch.watch}


def test_the_apps_register_every_live_view():
    from console import live

    assert set(live.FRAGMENTS) == {"overview", "broker", "layout", "at_risk", "topics", "topic", "groups", "group", "alerts"}
    expected = set(live.FRAGMENTS) | {"events", "status", "reassignment", "reassignments", "analytics", "reports",
                                      "alerts_history", "alert_rules", "alert_silences", "alert_channels",
                                      "connectors", "connect_plugins", "connector_form", "connector_delete",
                                      "replication", "transactions"}
    assert expected == live.VIEWS
    assert set(live.ON_MESSAGE) == {"reassignment.progress", "analytics.progress", "connect.update"}
    assert live.events_view() is not None
