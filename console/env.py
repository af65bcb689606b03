"""Typed helpers that read settings from environment variables and fail loudly on bad values."""

from __future__ import annotations

import os


class SettingError(RuntimeError):
    """A setting has a value the console cannot use; raised at start-up."""


def env_str(name: str, default: str) -> str:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(f"{name} must be a whole number, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise SettingError(f"{name} must be at least {minimum}, not {value}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name} must be a number, not {raw!r}") from None
    if value < minimum:
        raise SettingError(f"{name} must be at least {minimum}, not {value}")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise SettingError(f"{name} must be true or false, not {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_pairs(name: str) -> dict[str, str]:
    """`key=value` entries separated by semicolons (a value may hold spaces and `=`, not `;`)."""
    raw = os.environ.get(name) or ""
    pairs = {}
    for entry in (e.strip() for e in raw.split(";")):
        if not entry:
            continue
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise SettingError(f"{name} must hold key=value entries separated by ';', not {entry!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(name, default)
    if value not in choices:
        raise SettingError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value
