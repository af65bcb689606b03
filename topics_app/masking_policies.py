"""Masking policies as each process applies them: compiled once, recompiled when one changes.

Every save or delete of a policy changes `MaskingGeneration` (signals, connected by the app); each
lookup reads that one number and recompiles only when it changed, so a change made in any process
counts from the next request on in every process. A request costs two small reads (the generation,
the user's groups) and a loop over the compiled policies.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from typing import Any

from django.contrib.auth.models import Group
from django.db import connection
from django.db.models.signals import post_delete, post_save

from console.auth import role_of
from console.errors import BadParameter, ConsoleError
from topics_app.masking import CompiledPolicy, Masker, masker_of
from topics_app.models import MaskingGeneration, MaskingPolicy

log = logging.getLogger(__name__)

NAMES_KEPT_S = 5.0
_lock = threading.Lock()
_compiled: tuple[int, tuple[CompiledPolicy, ...]] = (-1, ())


def _rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """Plain SQL for the two reads every message request makes: the ORM's overhead would outweigh the queries themselves."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def generation() -> int:
    rows = _rows(f"SELECT value FROM {MaskingGeneration._meta.db_table} WHERE id = %s", [1])
    return int(rows[0][0]) if rows else 0


def bump() -> None:
    # A fresh random number rather than the next one: a number a rolled-back transaction or a
    # restored database hands out again would let a process keep policies compiled from other rows.
    value = secrets.randbits(62) or 1
    if not MaskingGeneration.objects.filter(pk=1).update(value=value):
        MaskingGeneration.objects.update_or_create(pk=1, defaults={"value": value})


def _changed(sender: Any, **kwargs: Any) -> None:
    bump()


def connect() -> None:
    """Bump the generation on every save and delete of a policy (from the app's ready())."""
    post_save.connect(_changed, sender=MaskingPolicy, dispatch_uid="masking-policy-saved")
    post_delete.connect(_changed, sender=MaskingPolicy, dispatch_uid="masking-policy-deleted")


def compiled() -> tuple[CompiledPolicy, ...]:
    """The enabled policies, compiled; rebuilt when the generation changed since the last build."""
    global _compiled
    current = generation()
    built_at, policies = _compiled
    if built_at == current:
        return policies
    with _lock:
        if _compiled[0] != current:
            # Read after the generation: a change committed in between changes it again, and the
            # next lookup rebuilds.
            _compiled = (current, tuple(_compile(p) for p in MaskingPolicy.objects.filter(enabled=True)))
        return _compiled[1]


class PolicyBroken(ConsoleError):
    """A stored policy that does not compile (written around the admin's and the API's checks)."""

    http_status = 503


def _compile(policy: MaskingPolicy) -> CompiledPolicy:
    try:
        return policy.compiled()
    except (BadParameter, KeyError, TypeError, AttributeError, ValueError) as exc:
        log.error("masking policy %r does not compile: %s", policy.name, exc)
        # Messages stay unread rather than shown unmasked: what the policy meant to hide is unknown.
        raise PolicyBroken(f"The masking policy '{policy.name}' is not valid, so no messages are shown. "
                           "An admin can fix or disable it in the admin pages or through /api/v1/masking-policies/.") from None


def names_of(user: Any) -> frozenset[str]:
    """The console role and Django group names a policy may name for this user.

    Kept on the user object for NAMES_KEPT_S: a request loads its user anew, but a websocket keeps
    its user for hours, and a user taken out of an exempt group must see the mark within seconds."""
    kept: tuple[float, frozenset[str]] | None = getattr(user, "_masking_names", None)
    now = time.monotonic()
    if kept is not None and now - kept[0] < NAMES_KEPT_S:
        return kept[1]
    role = role_of(user)
    groups = set()
    if getattr(user, "is_authenticated", False):
        through = user.groups.through._meta
        member = through.get_field("user").column
        group = through.get_field("group").column
        groups = {name for (name,) in _rows(f"SELECT g.name FROM {Group._meta.db_table} g JOIN {through.db_table} m "
                                            f"ON m.{group} = g.id WHERE m.{member} = %s", [user.pk])}
    names = frozenset(groups | ({role} if role else set()))
    with contextlib.suppress(AttributeError):  # a user object that takes no attributes is asked each time
        user._masking_names = (now, names)
    return names


def masker_for(user: Any, cluster: str, topic: str) -> Masker | None:
    """What this user may not see of this topic's records; None when they see everything."""
    policies = compiled()
    if not policies:
        return None
    return masker_of(policies, names_of(user), cluster, topic)
