"""JSON paths as message filters and masking policies write them: $.order.items[0].sku, $['a key'][*]."""

from __future__ import annotations

import re
from typing import Any

from console.errors import BadParameter

Step = tuple[str, Any]  # ("key", name) | ("index", n) | ("any", None)

_NAME = re.compile(r"[^.\[\]\s'\"]+")
_INDEX = re.compile(r"-?\d+")


def parse_json_path(path: str) -> tuple[Step, ...]:
    """Parse $.a.b[0]['c d'][*]; the leading $ is optional. BadParameter naming 'json_path' when invalid."""

    def bad(reason: str, at: int) -> BadParameter:
        return BadParameter(
            f"'json_path' is not a valid JSON path: {reason} at character {at + 1} of '{path[:100]}'. "
            "Write it like $.order.items[0].sku or $['a key'][*]."
        )

    steps: list[Step] = []
    i = 0
    if path.startswith("$"):
        i = 1
    elif path and path[0] not in ".[":
        m = _NAME.match(path)
        if m is None:
            raise bad("expected a name", 0)
        steps.append(("key", m.group()))
        i = m.end()
    while i < len(path):
        c = path[i]
        if c == ".":
            if path.startswith("*", i + 1):
                steps.append(("any", None))
                i += 2
                continue
            m = _NAME.match(path, i + 1)
            if m is None:
                raise bad("expected a name after '.'", i + 1)
            steps.append(("key", m.group()))
            i = m.end()
        elif c == "[":
            j = i + 1
            if path.startswith("*]", j):
                steps.append(("any", None))
                i = j + 2
            elif j < len(path) and path[j] in "'\"":
                quote, k, name = path[j], j + 1, []
                while k < len(path) and path[k] != quote:
                    if path[k] == "\\" and k + 1 < len(path):
                        k += 1
                    name.append(path[k])
                    k += 1
                if k >= len(path):
                    raise bad("unterminated quoted name", j)
                if not path.startswith("]", k + 1):
                    raise bad("expected ']'", k + 1)
                steps.append(("key", "".join(name)))
                i = k + 2
            else:
                m = _INDEX.match(path, j)
                if m is None:
                    raise bad("expected a number, '*' or a quoted name after '['", j)
                if not path.startswith("]", m.end()):
                    raise bad("expected ']'", m.end())
                steps.append(("index", int(m.group())))
                i = m.end() + 1
        else:
            raise bad(f"unexpected '{c}'", i)
    return tuple(steps)


def json_path_values(document: Any, steps: tuple[Step, ...]) -> list[Any]:
    """Every value the path reaches in a parsed JSON document (several with wildcards, none if absent)."""
    nodes = [document]
    for kind, arg in steps:
        found: list[Any] = []
        for node in nodes:
            if kind == "key":
                if isinstance(node, dict) and arg in node:
                    found.append(node[arg])
            elif kind == "index":
                if isinstance(node, list) and -len(node) <= arg < len(node):
                    found.append(node[arg])
            elif isinstance(node, dict):
                found.extend(node.values())
            elif isinstance(node, list):
                found.extend(node)
        if not found:
            return []
        nodes = found
    return nodes
