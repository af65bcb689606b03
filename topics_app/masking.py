"""Data masking: which parts of a record a user may not see, and the record as that user sees it.

Pure logic, no Django: a policy's fields are checked here (one sentence per mistake), compiled
once into `CompiledPolicy`, and the policies that reach one user on one topic merge into a `Masker`
that rewrites records before anything is decoded, filtered or serialised. A masked part is replaced,
never hidden beside its clear bytes: a JSON field becomes the string MARK (the document stays valid
JSON), a masked key, value or header becomes MARK and the record says which parts were masked.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from console import patterns
from console.errors import BadParameter
from console.gateway.messages.records import Record
from topics_app.json_path import Step, parse_json_path

log = logging.getLogger(__name__)

MARK = "****"  # what a masked key, value, header or JSON field shows instead of its content
MARK_BYTES = MARK.encode()
TOPIC_KINDS = ("literal", "prefix", "regex")
TARGET_KINDS = ("json_path", "header", "key", "value")
MAX_NAMES = 100  # roles/groups per list
MAX_TARGETS = 50
MAX_PATTERN_CHARS = 1000
REGEX_SECONDS = 0.05  # a topic pattern that needs longer on one topic name counts as matching (masks rather than leaks)


@dataclass(frozen=True)
class MaskedRecord(Record):
    """A record with parts replaced: "key", "value", "header:<name>" or "json:<path>" in `masked`."""

    masked: tuple[str, ...] = ()


def masked_parts(record: Record) -> tuple[str, ...]:
    return getattr(record, "masked", ())


# Validation: every mistake is one sentence naming the field --------------------------------------


def check_cluster(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadParameter("'cluster' must be '*' (every cluster) or a cluster's name.")
    if len(value) > 64:
        raise BadParameter("'cluster' must be at most 64 characters long.")
    return value.strip()


def check_topic_pattern(kind: Any, pattern: Any) -> str:
    if kind not in TOPIC_KINDS:
        raise BadParameter(f"'topic_kind' must be one of {', '.join(TOPIC_KINDS)}, not '{str(kind)[:30]}'.")
    if not isinstance(pattern, str) or not pattern:
        raise BadParameter("'topic_pattern' must be a non-empty string (a topic name, a prefix or a regular expression).")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise BadParameter(f"'topic_pattern' must be at most {MAX_PATTERN_CHARS} characters long.")
    if kind == "regex":
        patterns.compile_checked(pattern, False, "topic_pattern")
    return pattern


def check_names(value: Any, what: str) -> list[str]:
    """A list of console roles or Django group names."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadParameter(f"'{what}' must be a list of role or group names, such as [\"viewer\", \"support\"].")
    if len(value) > MAX_NAMES:
        raise BadParameter(f"'{what}' may name at most {MAX_NAMES} roles or groups.")
    if any(len(v) > 150 for v in value):
        raise BadParameter(f"'{what}': a role or group name is at most 150 characters long.")
    return sorted({v.strip() for v in value})


def check_targets(value: Any) -> list[dict[str, str]]:
    """[{"kind": "json_path", "path": "$.a.b"} | {"kind": "header", "name": "h"} | {"kind": "key"} | {"kind": "value"}]."""
    if not isinstance(value, list) or not value:
        raise BadParameter("'targets' must be a non-empty list such as [{\"kind\": \"json_path\", \"path\": \"$.customer.email\"}].")
    if len(value) > MAX_TARGETS:
        raise BadParameter(f"'targets' may hold at most {MAX_TARGETS} entries.")
    out: list[dict[str, str]] = []
    for i, target in enumerate(value):
        where = f"'targets[{i}]'"
        if not isinstance(target, Mapping):
            raise BadParameter(f"{where} must be an object with a 'kind'.")
        kind = target.get("kind")
        if kind not in TARGET_KINDS:
            raise BadParameter(f"{where}.kind must be one of {', '.join(TARGET_KINDS)}, not '{str(kind)[:30]}'.")
        allowed = {"kind", "path"} if kind == "json_path" else {"kind", "name"} if kind == "header" else {"kind"}
        extra = sorted(str(k) for k in target if k not in allowed)
        if extra:
            raise BadParameter(f"{where} of kind {kind} has no field '{extra[0][:30]}'; its fields are {', '.join(sorted(allowed))}.")
        if kind == "json_path":
            path = target.get("path")
            if not isinstance(path, str) or not path.strip():
                raise BadParameter(f"{where}.path must be a JSON path such as $.customer.email or $.cards[*].number.")
            try:
                parse_json_path(path.strip())
            except BadParameter as exc:
                raise BadParameter(f"{where}.path: " + exc.message.replace("'json_path' is", "it is")) from None
            out.append({"kind": kind, "path": path.strip()})
        elif kind == "header":
            name = target.get("name")
            if not isinstance(name, str) or not name.strip() or len(name) > 1000:
                raise BadParameter(f"{where}.name must be the header's name (a non-empty string).")
            out.append({"kind": kind, "name": name.strip()})
        else:
            out.append({"kind": kind})
    return out


# Compiled policies -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    key: bool = False
    value: bool = False
    headers: frozenset[str] = frozenset()  # lower case: a header's case must not let its value through
    paths: tuple[tuple[str, tuple[Step, ...]], ...] = ()  # (text, parsed)

    @staticmethod
    def of(targets: Iterable[Mapping[str, str]]) -> Targets:
        key = value = False
        headers: set[str] = set()
        paths: dict[str, tuple[Step, ...]] = {}
        for t in targets:
            if t["kind"] == "key":
                key = True
            elif t["kind"] == "value":
                value = True
            elif t["kind"] == "header":
                headers.add(t["name"].lower())
            else:
                paths[t["path"]] = parse_json_path(t["path"])
        return Targets(key, value, frozenset(headers), tuple(sorted(paths.items())))


@dataclass(frozen=True)
class CompiledPolicy:
    name: str
    cluster: str  # "*" for every cluster
    topic_kind: str
    topic_pattern: str
    applies_to: frozenset[str]  # empty: everyone
    exempt: frozenset[str]
    targets: Targets
    _regex: Any = field(default=None, compare=False, repr=False)

    @staticmethod
    def compile(name: str, cluster: str, topic_kind: str, topic_pattern: str, applies_to: Iterable[str],
                exempt: Iterable[str], targets: Iterable[Mapping[str, str]]) -> CompiledPolicy:
        runner = patterns.compile_checked(topic_pattern, False, "topic_pattern")[1] if topic_kind == "regex" else None
        return CompiledPolicy(name, cluster, topic_kind, topic_pattern, frozenset(applies_to), frozenset(exempt),
                              Targets.of(targets), runner)

    def covers_topic(self, cluster: str, topic: str) -> bool:
        if self.cluster != "*" and self.cluster != cluster:
            return False
        if self.topic_kind == "literal":
            return topic == self.topic_pattern
        if self.topic_kind == "prefix":
            return topic.startswith(self.topic_pattern)
        try:
            return self._regex.fullmatch(topic, timeout=REGEX_SECONDS) is not None  # type: ignore[no-any-return]
        except TimeoutError:
            log.warning("masking policy %r: its topic pattern timed out on %r; treated as matching", self.name, topic)
            return True

    def reaches(self, names: frozenset[str]) -> bool:
        """Whether a user holding these roles and groups is masked by this policy."""
        if self.exempt & names:
            return False
        return not self.applies_to or bool(self.applies_to & names)


def masker_of(policies: Iterable[CompiledPolicy], names: frozenset[str], cluster: str, topic: str) -> Masker | None:
    """The merged targets of every policy reaching this user on this topic; None when nothing is masked."""
    key = value = False
    headers: set[str] = set()
    paths: dict[str, tuple[Step, ...]] = {}
    hit: list[str] = []
    for p in policies:
        if p.covers_topic(cluster, topic) and p.reaches(names):
            hit.append(p.name)
            key, value = key or p.targets.key, value or p.targets.value
            headers |= p.targets.headers
            paths.update(p.targets.paths)
    if not hit:
        return None
    return Masker(Targets(key, value, frozenset(headers), tuple(sorted(paths.items()))), tuple(hit))


# Applying ----------------------------------------------------------------------------------------


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _mask_at(node: Any, steps: tuple[Step, ...]) -> int:
    """Replace what `steps` reaches inside `node` by MARK; the number of values replaced."""
    kind, arg = steps[0]
    rest = steps[1:]
    if kind == "key":
        slots = [arg] if isinstance(node, dict) and arg in node else []
    elif kind == "index":
        slots = [arg] if isinstance(node, list) and -len(node) <= arg < len(node) else []
    elif isinstance(node, dict):
        slots = list(node)
    elif isinstance(node, list):
        slots = list(range(len(node)))
    else:
        slots = []
    count = 0
    for slot in slots:
        if rest:
            count += _mask_at(node[slot], rest)
        else:
            node[slot] = MARK
            count += 1
    return count


@dataclass(frozen=True)
class Masker:
    targets: Targets
    policies: tuple[str, ...]  # the names of the policies that apply, for the audit log

    @property
    def touches_payload(self) -> bool:
        """Whether keys or values change (then a pre-filter on their raw bytes cannot be used)."""
        return self.targets.key or self.targets.value or bool(self.targets.paths)

    def _value(self, data: bytes) -> tuple[bytes, list[str]]:
        try:
            document = json.loads(data.decode("utf-8"), parse_constant=_not_json)
        except (ValueError, RecursionError):
            # A value that is not JSON text may hold the field in a form not parsed here
            # (MessagePack, a string with JSON inside): it is masked whole rather than shown.
            return MARK_BYTES, ["value"]
        done = []
        for text, steps in self.targets.paths:
            if not steps:
                return MARK_BYTES, ["value"]
            if _mask_at(document, steps):
                done.append("json:" + text)
        if not done:
            return data, []
        # Re-serialised from the parsed document: nothing of the original text (duplicate keys,
        # escapes) survives beside the replaced fields.
        try:
            return orjson.dumps(document), done
        except TypeError:  # a lone surrogate escape or a number beyond 64 bits: the standard library writes those
            return json.dumps(document, separators=(",", ":")).encode("ascii"), done

    def apply(self, r: Record) -> Record:
        t = self.targets
        masked: list[str] = []
        key, value, headers = r.key, r.value, r.headers
        if t.key and key is not None:
            key = MARK_BYTES
            masked.append("key")
        if value is not None:
            if t.value:
                value = MARK_BYTES
                masked.append("value")
            elif t.paths:
                value, done = self._value(value)
                masked += done
        if t.headers and headers:
            changed: list[tuple[str, bytes | None]] = []
            for name, v in headers:
                if v is not None and name.lower() in t.headers:
                    changed.append((name, MARK_BYTES))
                    masked.append("header:" + name)
                else:
                    changed.append((name, v))
            headers = tuple(changed)
        if not masked:
            return r
        if isinstance(r, MaskedRecord):  # a record decoded by its schema (topics_app/schemas.py) keeps what it says of that
            return dataclasses.replace(r, key=key, value=value, headers=headers, masked=tuple(dict.fromkeys((*r.masked, *masked))))
        return MaskedRecord(r.topic, r.partition, r.offset, r.timestamp_ms, r.timestamp_type, key, value, headers,
                            r.key_size, r.value_size, tuple(dict.fromkeys(masked)))

