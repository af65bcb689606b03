"""A counter in Redis that every change of a rule, a channel or a silence bumps (apps.py's signals,
and the shipped rules' bulk insert): each evaluator reads its rules and silences again at its next
cycle when it moved, whichever process made the change."""

from __future__ import annotations

import logging

from console import snapshots

log = logging.getLogger(__name__)

GENERATION_KEY = "console:alerts-generation"


def bump_generation() -> None:
    try:
        snapshots.redis_client().incr(GENERATION_KEY)
    except Exception:  # noqa: BLE001 - Redis down: the evaluators read the rules again within their max age anyway
        log.warning("could not bump the alerts generation", exc_info=True)


def read_generation() -> bytes | None:
    try:
        value = snapshots.redis_client().get(GENERATION_KEY)
        return value if isinstance(value, bytes) else None
    except Exception:  # noqa: BLE001 - Redis down: the evaluators read the rules again within their max age anyway
        return None
