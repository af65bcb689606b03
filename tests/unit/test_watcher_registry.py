"""console.watcher imports no app: the apps register their part from AppConfig.ready()."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

APPS = ("brokers_app", "consumers_app", "topics_app", "analytics")


def test_the_watcher_package_imports_no_app():
    found = []
    for path in sorted((ROOT / "console" / "watcher").glob("*.py")):
        for node in ast.walk(ast.parse(Path(path).read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in APPS]
    assert found == []


def test_the_apps_register_their_parts_when_django_starts():
    from analytics.sampling import SampleWriter
    from brokers_app.watching import EventTable
    from console.watcher import registry
    from consumers_app.watching import GroupEvaluation

    assert isinstance(registry.events(), EventTable)
    assert isinstance(registry.group_evaluator("c", True, lambda rows: None), GroupEvaluation)
    assert isinstance(registry.sample_writer("c", object()), SampleWriter)
