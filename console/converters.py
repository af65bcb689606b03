"""Path converters for names that clients choose freely.

Kafka lets a client pick almost any group id: `team/service`, `</script>`, `a%2Fb`, `a?b#c`, spaces,
unicode, even `..`. Django's reverse() percent-encodes `?`, `#`, `%`, spaces and unicode, and the
server decodes them again before routing, so those round-trip by themselves. Two things do not:
a `/` (the ASGI server hands `%2F` to Django already decoded, so it would split the path) and the
dot segments `.` and `..` (browsers resolve them away). Those are escaped as `~XX` (hex of the
byte), and `~` itself as `~7E`, so every id maps to exactly one path segment and back. A client
that sends the standard `%2F` instead reaches the same route: console/rawpath.py turns such a
segment into this form before Django routes it.
"""

from __future__ import annotations

import re

_ESCAPED = re.compile(r"~([0-9A-Fa-f]{2})")


def encode_name(value: str) -> str:
    if value == "":
        return "~"
    if value in {".", ".."}:
        return value.replace(".", "~2E")
    return value.replace("~", "~7E").replace("/", "~2F")


def decode_name(segment: str) -> str:
    if segment == "~":
        return ""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), segment)


class FreeNameConverter:
    """Any string as one path segment (see the module's docstring)."""

    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return decode_name(value)

    def to_url(self, value: str) -> str:
        return encode_name(str(value))
