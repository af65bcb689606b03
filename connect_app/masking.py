"""A connector's config as the console shows it: secrets masked, config provider references named.

A key is secret when the plugin declares it of type PASSWORD (its config definitions), or when its
name says so (`*.password`, `*.jaas.config`, ...: the worker's own and its clients' override keys are
not in the plugin's definitions). A value that is a config provider reference (`${file:/path:key}`)
is no secret itself: it is shown as the reference it is, and the secret stays with the provider.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

MASK = "********"
_SECRET_NAME = re.compile(r"(password|passwd|secret|jaas\.config|credentials?|api[._-]?key|token|private[._-]key)$", re.I)
_REFERENCE = re.compile(r"\$\{[^}:]*:[^}]*\}")


@dataclass(frozen=True)
class ConfigEntry:
    key: str
    value: str  # MASK for a secret
    secret: bool = False
    reference: bool = False  # a config provider reference, shown as written


def is_reference(value: str) -> bool:
    return _REFERENCE.search(value) is not None


def is_secret(key: str, password_keys: Collection[str]) -> bool:
    return key in password_keys or _SECRET_NAME.search(key) is not None


def masked(config: Mapping[str, str], password_keys: Collection[str]) -> list[ConfigEntry]:
    entries = []
    for k in sorted(config, key=lambda k: (k != "connector.class", k != "name", k)):
        value = str(config[k])
        if is_reference(value):
            entries.append(ConfigEntry(k, value, secret=is_secret(k, password_keys), reference=True))
        elif is_secret(k, password_keys) and value:
            entries.append(ConfigEntry(k, MASK, secret=True))
        else:
            entries.append(ConfigEntry(k, value))
    return entries


def unmasked(sent: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
    """A config sent back with the mask in place of a secret keeps that secret's current value, so a
    config read, changed and written back does not overwrite its passwords with the mask."""
    return {k: (current[k] if v == MASK and k in current else v) for k, v in sent.items()}
