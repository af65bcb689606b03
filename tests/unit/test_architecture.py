"""The architecture's rules (docs/ARCHITECTURE.md), checked on the product's code: the lint that holds
the direction of imports fails on a wrong import, files stay small, imports form no circle, and one
definition of TopicPartition and of each setting's reading."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("console", "brokers_app", "topics_app", "consumers_app", "analytics", "security_app", "alerts_app", "connect_app")
APPS = PACKAGES[1:]
BIN = Path(sys.executable).parent
MAX_LINES = 500
# Setting DJANGO_SETTINGS_MODULE before Django starts is how an entry point names its settings.
ENTRY_POINT_LINES = {"console/celery.py", "console/asgi.py", "manage.py"}
# The settings module, and the typed helpers it reads the environment through.
SETTINGS_READERS = {"console/settings.py", "console/env.py"}


def product_files() -> Iterator[Path]:
    yield ROOT / "manage.py"
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# (a) The lint fails on a wrong import ------------------------------------------------------------


def copy_product(to: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, to / package, ignore=shutil.ignore_patterns("__pycache__", "lib", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", to / "pyproject.toml")


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=where, capture_output=True, text=True, timeout=120,
                          env={"PATH": str(BIN), "PYTHONPATH": str(where), "HOME": str(where)})


def ruff(where: Path, *files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "--output-format", "concise", *files], cwd=where,
                          capture_output=True, text=True, timeout=120)


def test_console_importing_an_app_outside_the_routing_fails_the_lint(tmp_path: Path) -> None:
    copy_product(tmp_path)
    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr  # (the root URLs and websocket routes may name the apps)
    (tmp_path / "console" / "wrong_way.py").write_text('"""A console module that uses an app."""\n\nfrom topics_app import services\n\n'
                                                      "NAMES = services\n")
    broken = lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "console.wrong_way -> topics_app.services" in broken.stdout


def test_an_app_importing_another_apps_private_name_fails_the_lint(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for app in ("topics_app", "consumers_app"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    (tmp_path / "topics_app" / "browse.py").write_text('"""Its own helpers."""\n\n\ndef _helper() -> int:\n    return 1\n\n\n'
                                                      "def helper() -> int:\n    return _helper()\n")
    (tmp_path / "consumers_app" / "public.py").write_text('"""Uses the public name."""\n\nfrom topics_app.browse import helper\n\n'
                                                         "VALUE = helper()\n")
    (tmp_path / "consumers_app" / "private.py").write_text('"""Uses the private name."""\n\nfrom topics_app.browse import _helper\n\n'
                                                          "VALUE = _helper()\n")
    public = ruff(tmp_path, "consumers_app/public.py", "topics_app/browse.py")
    assert public.returncode == 0, public.stdout + public.stderr
    private = ruff(tmp_path, "consumers_app/private.py")
    assert private.returncode != 0
    assert "import-private-name" in private.stdout and "_helper" in private.stdout


# (b) Small files -----------------------------------------------------------------------------------


def test_no_product_file_is_over_500_lines() -> None:
    long = {rel(p): n for p in product_files() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: " + ", ".join(f"{name} ({n})" for name, n in sorted(long.items()))


# (c) No import circle --------------------------------------------------------------------------------


def import_circles() -> list[list[str]]:
    """The groups of product modules that import each other, through any path (imports inside
    functions count; imports under `if TYPE_CHECKING` do not run, so they do not)."""
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, exclude_type_checking_imports=True, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in edges:  # Tarjan's strongly connected components, without recursion
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in edges[node]:
                    circles.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return circles


def test_the_circle_finder_finds_a_circle_through_an_import_inside_a_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", ("loop_pkg",))
    (tmp_path / "loop_pkg").mkdir()
    (tmp_path / "loop_pkg" / "__init__.py").write_text("")
    (tmp_path / "loop_pkg" / "a.py").write_text("from loop_pkg import b\n")
    (tmp_path / "loop_pkg" / "b.py").write_text("def later():\n    from loop_pkg import c\n")
    (tmp_path / "loop_pkg" / "c.py").write_text("import loop_pkg.a\n")
    (tmp_path / "loop_pkg" / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from loop_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_circles() == [["loop_pkg.a", "loop_pkg.b", "loop_pkg.c"]]


def test_no_product_modules_import_each_other_in_a_circle() -> None:
    circles = import_circles()
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


# (d) One definition of each -----------------------------------------------------------------------


def test_topic_partition_is_defined_once() -> None:
    found = []
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, getattr(ast, "TypeAlias", ())):  # (`type X = ...`, Python 3.12)
                targets = [node.name]  # type: ignore[attr-defined]
            elif isinstance(node, ast.ClassDef) and node.name == "TopicPartition":
                found.append(f"{rel(path)}:{node.lineno}")
            found += [f"{rel(path)}:{t.lineno}" for t in targets if isinstance(t, ast.Name) and t.id == "TopicPartition"]
    assert len(found) == 1, f"TopicPartition is defined at {found}"


def environment_reads(source: str) -> list[int]:
    """Lines that read the process's environment: `os.environ[...]`, `.get`, `in`, iteration,
    `os.getenv`. Writing it (for a child process or a library that reads it at start), and passing
    all of it on to a child process (`{**os.environ, ...}`), read no setting."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "getenv" and isinstance(node.value, ast.Name) and node.value.id == "os":
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in {"environ", "getenv"} for a in node.names):
            lines.append(node.lineno)
        if not (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store):
            continue
        if isinstance(parent, ast.Attribute) and parent.attr in {"setdefault", "update"}:
            continue
        if isinstance(parent, ast.Dict) and None in parent.keys and parent.values[parent.keys.index(None)] is node:
            continue
        lines.append(node.lineno)
    return sorted(lines)


def test_the_environment_reader_tells_reads_from_writes() -> None:
    source = ("import os\n"
              "a = os.environ.get('A')\n"
              "b = os.environ['B']\n"
              "c = os.getenv('C')\n"
              "d = 'D' in os.environ\n"
              "os.environ['E'] = '1'\n"
              "os.environ.setdefault('F', '1')\n"
              "env = {**os.environ, 'G': '1'}\n")
    assert environment_reads(source) == [2, 3, 4, 5]


def test_only_the_settings_read_the_environment() -> None:
    found = []
    for path in product_files():
        name = rel(path)
        if name in SETTINGS_READERS:
            continue
        source = path.read_text()
        lines = source.splitlines()
        for line in environment_reads(source):
            if name in ENTRY_POINT_LINES and "DJANGO_SETTINGS_MODULE" in lines[line - 1]:
                continue
            found.append(f"{name}:{line}: {lines[line - 1].strip()}")
    assert not found, "read the environment outside console/settings.py: " + "; ".join(found)
