"""SCRAM users of a cluster: list them, set a password (creating the user), delete credentials (admin).

Kafka keeps a salted hash per mechanism, never the password, so a list shows names, mechanisms and
iteration counts only. A password is taken from the request body, checked here and handed to the
gateway; it is never logged, audited or sent back (audit entries name the user and mechanism).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console import gateway
from console.audit import audited
from console.errors import BadParameter
from console.gateway.errors import NotFound
from console.gateway.scram import ScramUser

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# Kafka's own bounds (ScramMechanism's minimum, the controller's maximum); it refuses anything outside them.
MIN_ITERATIONS, MAX_ITERATIONS, DEFAULT_ITERATIONS = 4096, 16384, 4096
# Kafka has no minimum length (it only ever sees the salted hash), so this one is the console's.
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024
MAX_NAME_LENGTH = 255


@dataclass
class Outcome:
    dry_run: bool
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def check_name(name: str) -> str:
    if not name:
        raise BadParameter("The user name is empty.")
    if len(name) > MAX_NAME_LENGTH:
        raise BadParameter(f"The user name is {len(name)} characters long; the console allows at most {MAX_NAME_LENGTH}.")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise BadParameter("The user name contains a control character; clients could not type it in their login settings.")
    if name != name.strip():
        raise BadParameter("The user name starts or ends with a space; clients would hardly log in with it.")
    return name


def check_mechanism(mechanism: str) -> str:
    if mechanism not in MECHANISMS:
        raise BadParameter(f"Unknown SCRAM mechanism '{mechanism}'; Kafka's are {' and '.join(MECHANISMS)}.")
    return mechanism


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise BadParameter(f"The password must be at least {MIN_PASSWORD_LENGTH} characters long (the console's minimum: "
                           "Kafka sets none, since it only ever sees a salted hash).")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise BadParameter(f"The password must be at most {MAX_PASSWORD_LENGTH} characters long.")
    return password


def check_iterations(iterations: int) -> int:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise BadParameter(f"SCRAM iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS} (Kafka's bounds), "
                           f"not {iterations}.")
    return iterations


def as_dict(user: ScramUser) -> dict[str, Any]:
    return {"name": user.name, "mechanisms": [{"mechanism": c.mechanism, "iterations": c.iterations} for c in user.credentials]}


def list_users(cluster: str) -> list[dict[str, Any]]:
    return [as_dict(u) for u in gateway.for_cluster(cluster).scram_users()]


def _find(cluster: str, name: str) -> ScramUser | None:
    return next((u for u in gateway.for_cluster(cluster).scram_users() if u.name == name), None)


def _audited(user: Any, action: str, cluster: str, target: str, details: dict[str, Any], dry_run: bool,
             change: Callable[[], Outcome]) -> Outcome:
    with audited(user, action, cluster=cluster, target=target, dry_run=dry_run, details=details) as entry:
        outcome = change()
        entry.update(outcome.details)
    return outcome


def set_password(user: Any, cluster: str, name: str, mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                 dry_run: bool = False) -> Outcome:
    """Create the user's credential for `mechanism`, or replace its password. Every check runs before
    Kafka is asked, so a dry run (Kafka's request has no validate-only mode) refuses what Kafka would."""
    details = {"mechanism": mechanism, "iterations": iterations}  # never the password

    def change() -> Outcome:
        check_name(name)
        check_mechanism(mechanism)
        check_password(password)
        check_iterations(iterations)
        found = _find(cluster, name)
        exists = found is not None and any(c.mechanism == mechanism for c in found.credentials)
        if not dry_run:
            gateway.for_cluster(cluster).upsert_scram_credential(name, mechanism, password, iterations)
        what = (f"the {mechanism} password of user '{name}'" if exists
                else f"user '{name}' with {mechanism} ({iterations} iterations)")
        verb = ("Would change" if exists else "Would create") if dry_run else ("Changed" if exists else "Created")
        return Outcome(dry_run, f"{verb} {what}.", {"created": not exists})

    return _audited(user, "scram_user_set", cluster, name, details, dry_run, change)


def delete_user(user: Any, cluster: str, name: str, mechanism: str | None = None, dry_run: bool = False) -> Outcome:
    """Remove the user's credential for `mechanism`, or all of them (the user is gone when none is left)."""

    def change() -> Outcome:
        if mechanism is not None:
            check_mechanism(mechanism)
        found = _find(cluster, name)
        have = [c.mechanism for c in found.credentials] if found else []
        if not have:
            raise NotFound(f"Cluster '{cluster}' has no SCRAM user '{name}'.")
        if mechanism is not None and mechanism not in have:
            raise NotFound(f"User '{name}' has no {mechanism} credential; it has {', '.join(have)}.")
        gone = [mechanism] if mechanism is not None else have
        if not dry_run:
            gateway.for_cluster(cluster).delete_scram_credentials(name, gone)
        left = [m for m in have if m not in gone]
        verb = "Would delete" if dry_run else "Deleted"
        what = (f"the {', '.join(gone)} credential of user '{name}'" if left
                else f"user '{name}' ({', '.join(gone)})")
        return Outcome(dry_run, f"{verb} {what}.", {"mechanisms": gone, "left": left})

    return _audited(user, "scram_user_delete", cluster, name, {"mechanism": mechanism}, dry_run, change)
