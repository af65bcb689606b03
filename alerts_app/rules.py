"""What a rule, a silence and a list filter may say, checked before anything is saved: each mistake
is one sentence naming the field, the same under the API and on the forms. Pure: no database, no
request (channels named by a rule are checked against the names given)."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from alerts_app.models import CONDITIONS, SEVERITIES
from console.errors import BadParameter
from console.patterns import compile_checked

GROUP_STATUSES = ("WARN", "ERR", "STOP", "STALL")
# What a rule's target names, per condition (and so what its `key` is about).
TARGETS: dict[str, str] = {
    "group_status": "group", "group_lag": "group", "partition_lag": "group", "time_lag": "group",
    "under_replicated": "topic", "under_min_isr": "topic", "offline": "topic", "produce_rate_zero": "topic",
    "broker_down": "broker", "quorum_lag": "broker",
    "no_controller": "cluster", "controller_moved": "cluster", "job_failed": "job",
    "connect_task_failing": "connector", "transaction_hanging": "topic",
}
# Conditions that compare with `threshold`, and what it counts.
THRESHOLDS: dict[str, str] = {"group_lag": "records", "partition_lag": "records", "time_lag": "seconds",
                              "quorum_lag": "records"}
DESCRIPTIONS: dict[str, str] = {
    "group_status": "a group's lag status is at least the chosen status (WARN, ERR, STOP or STALL)",
    "group_lag": "a group's total lag is above the threshold (records)",
    "partition_lag": "one of a group's partitions lags by more than the threshold (records)",
    "time_lag": "a group's time lag is above the threshold (seconds)",
    "under_replicated": "a topic has partitions with fewer in-sync replicas than replicas",
    "under_min_isr": "a topic has partitions with fewer in-sync replicas than min.insync.replicas",
    "offline": "a topic has partitions without a leader",
    "broker_down": "a broker left the cluster or the console cannot reach it",
    "no_controller": "the cluster has no active controller",
    "controller_moved": "the active controller changed",
    "quorum_lag": "a KRaft quorum follower is more than the threshold (records) behind the leader",
    "produce_rate_zero": "a topic received no records for the rule's duration",
    "job_failed": "a reassignment or an analytics run failed",
    "connect_task_failing": "a Kafka Connect task failed and no auto-restart policy restarts it (none, or it gave up)",
    "transaction_hanging": "a hanging transaction holds a partition's last stable offset, stopping read_committed consumers",
}
MATCHER_FIELDS = ("rule", "condition", "key", "severity", "target")
MAX_SECONDS = 366 * 24 * 3600  # a duration longer than a year is a typo
NAME_LENGTH, TARGET_LENGTH = 200, 500


def _text(value: Any, field: str, limit: int, *, required: bool = True) -> str:
    if not isinstance(value, str):
        raise BadParameter(f"'{field}' must be a string.")
    value = value.strip()
    if required and not value:
        raise BadParameter(f"'{field}' must not be empty.")
    if len(value) > limit:
        raise BadParameter(f"'{field}' must be at most {limit} characters long.")
    if any(ord(c) < 32 for c in value):
        raise BadParameter(f"'{field}' must not contain control characters.")
    return value


def seconds(value: Any, field: str, *, minimum: int = 0) -> int:
    """A whole number of seconds from `minimum` to a year: "for_seconds must be 0 or more seconds."."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())  # (a form's field)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadParameter(f"{field} must be a whole number of seconds.")
    if value < minimum:
        raise BadParameter(f"{field} must be {minimum} or more seconds.")
    if value > MAX_SECONDS:
        raise BadParameter(f"{field} must be at most {MAX_SECONDS} seconds (a year).")
    return value


def condition(value: Any) -> str:
    if not isinstance(value, str) or value not in CONDITIONS:
        shown = str(value)[:60] if value not in (None, "") else ""
        start = f"'{shown}' is not a condition" if shown else "'condition' is needed"
        raise BadParameter(f"{start}; conditions are {', '.join(CONDITIONS)}.")
    return value


def severity(value: Any) -> str:
    if not isinstance(value, str) or value not in SEVERITIES:
        raise BadParameter(f"'{str(value)[:40]}' is not a severity; severities are {', '.join(SEVERITIES)}.")
    return value


def target(value: Any, cond: str) -> str:
    """A name, a glob (`orders-*`), `*`, or `re:<regex>` (checked here, run with a time limit later)."""
    text = _text(value if value is not None else "*", "target", TARGET_LENGTH, required=False) or "*"
    kind = TARGETS.get(cond, "")
    if text.startswith("re:"):
        if not text[3:]:
            raise BadParameter("'target' needs a regular expression after 're:'.")
        compile_checked(text[3:], False, "target")
        return text
    if kind == "cluster" and text != "*":
        raise BadParameter(f"Condition {cond} is about the whole cluster, so its target must be '*'.")
    if kind == "broker" and text != "*" and not text.isdigit() and not any(c in text for c in "*?["):
        raise BadParameter(f"Condition {cond} is about brokers: the target must be a broker id (such as 2), a glob, "
                           f"'*' or 're:<regex>', not '{text[:60]}'.")
    if any(c in text for c in "*?["):
        try:
            fnmatch.translate(text)
        except (ValueError, IndexError):
            raise BadParameter(f"'target' is not a valid glob: '{text[:60]}'.") from None
    return text


def threshold(value: Any, cond: str) -> float | None:
    unit = THRESHOLDS.get(cond)
    if unit is None:
        return None  # (the condition compares with nothing: a value sent is dropped)
    if value is None or value == "":
        raise BadParameter(f"Condition {cond} needs a 'threshold' ({unit}).")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise BadParameter(f"'threshold' must be a number of {unit}, not '{value[:40]}'.") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise BadParameter(f"'threshold' must be a number of {unit}.")
    if value < 0:
        raise BadParameter(f"'threshold' must be 0 or more {unit}.")
    return float(value)


def status(value: Any, cond: str) -> str:
    if cond != "group_status":
        return ""
    if not isinstance(value, str) or value.upper() not in GROUP_STATUSES:
        raise BadParameter(f"Condition group_status needs a 'status': one of {', '.join(GROUP_STATUSES)}.")
    return value.upper()


def channel_names(value: Any, known: Collection[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadParameter("'channels' must be a list of channel names.")
    missing = [v for v in value if v not in known]
    if missing:
        have = f"the channels are {', '.join(sorted(known))}" if known else "no channel exists yet (an admin creates them)"
        raise BadParameter(f"'channels' names no channel '{missing[0][:100]}'; {have}.")
    return list(dict.fromkeys(value))


def boolean(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise BadParameter(f"'{field}' must be true or false.")
    return value


RULE_FIELDS = ("name", "condition", "target", "threshold", "status", "for_seconds", "severity", "channels",
               "repeat_seconds", "enabled")


def rule(fields: Mapping[str, Any], known_channels: Collection[str], current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A rule's fields checked and normalized. `current`: the saved rule, for a change that sends only
    some fields (PATCH), which are checked together with the rest."""
    unknown = sorted(str(k) for k in fields if k not in RULE_FIELDS)
    if unknown:
        raise BadParameter(f"'{unknown[0][:60]}' is not a field of a rule; the fields are {', '.join(RULE_FIELDS)}.")
    merged: dict[str, Any] = {"target": "*", "for_seconds": 0, "severity": "warning", "channels": [], "repeat_seconds": 3600,
                              "enabled": True, "threshold": None, "status": "", **(current or {}), **fields}
    if "name" not in merged:
        raise BadParameter("'name' is needed: what the rule is called in messages and lists.")
    cond = condition(merged.get("condition"))
    return {
        "name": _text(merged["name"], "name", NAME_LENGTH),
        "condition": cond,
        "target": target(merged["target"], cond),
        "threshold": threshold(merged["threshold"], cond),
        "status": status(merged["status"], cond),
        "for_seconds": seconds(merged["for_seconds"], "for_seconds", minimum=60 if cond == "produce_rate_zero" else 0),
        "severity": severity(merged["severity"]),
        "channels": channel_names(merged["channels"], known_channels),
        "repeat_seconds": seconds(merged["repeat_seconds"], "repeat_seconds"),
        "enabled": boolean(merged["enabled"], "enabled"),
    }


# Silences ------------------------------------------------------------------------------------------


def matchers(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise BadParameter("'matchers' must be a list of at least one {\"field\", \"value\", \"regex\"?}: "
                           "a silence that matches everything would hide every alert.")
    if len(value) > 20:
        raise BadParameter("'matchers' may hold at most 20 matchers.")
    out = []
    for i, m in enumerate(value):
        where = f"matchers[{i}]"
        if not isinstance(m, Mapping):
            raise BadParameter(f"'{where}' must be an object with field, value and regex.")
        extra = sorted(str(k) for k in m if k not in ("field", "value", "regex"))
        if extra:
            raise BadParameter(f"'{where}.{extra[0][:40]}' is not a field of a matcher; the fields are field, value, regex.")
        field = m.get("field")
        if field not in MATCHER_FIELDS:
            raise BadParameter(f"'{where}.field' must be one of {', '.join(MATCHER_FIELDS)}.")
        text = _text(m.get("value"), f"{where}.value", TARGET_LENGTH)
        regex = boolean(m.get("regex", False), f"{where}.regex")
        if regex:
            compile_checked(text, False, f"{where}.value")
        out.append({"field": field, "value": text, "regex": regex})
    return out


def silence_end(ends_at: Any, duration_seconds: Any, now: datetime) -> datetime:
    """When a silence ends: `ends_at` (an ISO time, in the future) or `duration_seconds` from now."""
    if (ends_at in (None, "")) == (duration_seconds in (None, "")):
        raise BadParameter("Give either 'ends_at' (an ISO date and time) or 'duration_seconds', not both or neither.")
    if ends_at not in (None, ""):
        when = moment(ends_at, "ends_at")
        if when <= now:
            raise BadParameter("'ends_at' must be in the future.")
        if when - now > timedelta(seconds=MAX_SECONDS):
            raise BadParameter("'ends_at' must be at most a year from now.")
        return when
    return now + timedelta(seconds=seconds(duration_seconds, "duration_seconds", minimum=60))


def comment(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadParameter("'comment' is needed: say why these alerts are silenced.")
    return _text(value, "comment", 2000)


def cluster_of_silence(value: Any, known: Collection[str]) -> str:
    text = "*" if value in (None, "") else value
    if not isinstance(text, str) or (text != "*" and text not in known):
        raise BadParameter(f"'cluster' must be '*' (every cluster) or one of {', '.join(sorted(known))}.")
    return text


# List filters -------------------------------------------------------------------------------------


def moment(raw: Any, field: str) -> datetime:
    """An ISO date and time (UTC unless it names its zone) or milliseconds since 1970."""
    if isinstance(raw, str) and raw.strip().isdigit():
        return datetime.fromtimestamp(int(raw.strip()) / 1000, tz=UTC)
    if not isinstance(raw, str):
        raise BadParameter(f"'{field}' must be an ISO date and time or milliseconds since 1970.")
    try:
        when = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadParameter(f"'{field}' must be an ISO date and time or milliseconds since 1970, not '{raw[:50]}'.") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


ALERT_STATES = ("active", "pending", "firing", "resolved")


def alert_filters(params: Mapping[str, str], rule_names: Collection[str] = ()) -> dict[str, Any]:
    """The alert list's filters from query parameters: state, rule (a name or id), severity, key
    (contains), since and until (when the condition was first seen)."""
    out: dict[str, Any] = {}
    state = params.get("state", "")
    if state:
        if state not in ALERT_STATES:
            raise BadParameter(f"'state' must be one of {', '.join(ALERT_STATES)}, not '{state[:40]}'.")
        out["state"] = state
    sev = params.get("severity", "")
    if sev:
        if sev not in SEVERITIES:
            raise BadParameter(f"'severity' must be one of {', '.join(SEVERITIES)}, not '{sev[:40]}'.")
        out["severity"] = sev
    if params.get("rule"):
        out["rule"] = _text(params["rule"], "rule", NAME_LENGTH)
    if params.get("key"):
        out["key"] = _text(params["key"], "key", TARGET_LENGTH)
    for name in ("since", "until"):
        if params.get(name):
            out[name] = moment(params[name], name)
    if "since" in out and "until" in out and out["since"] > out["until"]:
        raise BadParameter("'since' must not be after 'until'.")
    return out
