"""Message browsing use cases: parse a request, scan or tail through the gateway, shape the rows.

Shared by the page (first page rendered on the server), its websocket (progress, stop, live tail)
and the REST API (JSON, JSON Lines, CSV).
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from console import gateway
from console.audit import record as audit
from console.errors import BadParameter
from console.gateway.messages.records import Record
from console.gateway.messages.scan import scan
from console.gateway.messages.scan_spec import ScanProgress, ScanSpec
from console.gateway.messages.tail import tail
from console.params import choice_param, int_param, timestamp_ms
from topics_app import schemas
from topics_app.decoding import DECODINGS, Decoded, decode
from topics_app.masking import MARK, Masker, masked_parts
from topics_app.masking_policies import masker_for
from topics_app.message_filters import FilterSpec, build_matcher, build_raw_matcher
from topics_app.schemas import PartNote, TopicDecoder, decoder_for, notes

STARTS = {"newest", "oldest", "offset", "timestamp"}
TARGETS = {"value", "key", "headers", "any"}
ENCODINGS = {"text", "json", "base64", "hex"}
MAX_PAGE = 1000


@dataclass(frozen=True)
class BrowseRequest:
    spec: ScanSpec
    filters: FilterSpec
    decode_key: str
    decode_value: str
    masker: Masker | None = None  # what the reading user may not see (topics_app/masking.py)
    decoder: TopicDecoder | None = None  # the topic's uploaded schemas (topics_app/schemas.py)

    def seen(self, r: Record) -> Record:
        """The record as the user sees it: decoded by its schema, then masked (masking reads the decoded JSON)."""
        if self.decoder is not None:
            r = self.decoder.apply(r)
        return r if self.masker is None else self.masker.apply(r)

    @property
    def matcher(self) -> Callable[[Record], bool] | None:
        # Filters look at the record as the user sees it: a search for a masked value must not
        # tell, by what it finds, what the value is.
        matches = build_matcher(self.filters)
        if matches is None or (self.masker is None and self.decoder is None):
            return matches
        return lambda r: matches(self.seen(r))

    @property
    def raw_matcher(self) -> Callable[[bytes | None, bytes | None], bool] | None:
        if self.masker is not None and self.masker.touches_payload:
            return None  # a pre-filter on the clear bytes would answer for them
        if self.decoder is not None:
            return None  # filters look at the decoded JSON, which the encoded bytes need not contain
        return build_raw_matcher(self.filters)

    def masked(self, records: list[Record]) -> list[Record]:
        if self.masker is None and self.decoder is None:
            return records
        return [self.seen(r) for r in records]


def _partitions(raw: str) -> tuple[int, ...] | None:
    raw = raw.strip()
    if not raw or raw == "all":
        return None
    try:
        parts = tuple(sorted({int(x) for x in raw.split(",") if x.strip()}))
    except ValueError:
        raise BadParameter(f"'partitions' must be 'all' or numbers separated by commas, not '{raw[:50]}'.") from None
    if any(p < 0 for p in parts):
        raise BadParameter("'partitions' cannot be negative.")
    return parts


def _positions(raw: str) -> tuple[tuple[int, int], ...] | None:
    """`partition:offset,...` from a previous page's positions."""
    if not raw.strip():
        return None
    try:
        pairs = tuple((int(p), int(o)) for p, _, o in (item.partition(":") for item in raw.split(",")))
    except ValueError:
        raise BadParameter("'positions' must look like 0:120,1:98.") from None
    return pairs


def parse_request(topic: str, params: Mapping[str, str], *, masker: Masker | None,
                  decoder: TopicDecoder | None = None) -> BrowseRequest:
    """`masker`: masking_policies.masker_for(user, cluster, topic), asked of every caller so none forgets it."""
    start = choice_param(params, "start", STARTS) or "newest"
    limit = int_param(params, "limit", 50, minimum=1, maximum=MAX_PAGE) or 50
    # "Newest" means the newest `limit` matches over all chosen partitions: read back from the end
    # (and its next pages keep going back).
    direction = choice_param(params, "direction", {"forward", "backward"}) or ("backward" if start == "newest" else "forward")
    positions = _positions(params.get("positions", ""))
    offset = int_param(params, "offset", minimum=0)
    timestamp = timestamp_ms(params["timestamp"]) if params.get("timestamp", "").strip() else None
    if start == "offset" and offset is None and positions is None:
        raise BadParameter("Give the 'offset' to start at.")
    if start == "timestamp" and timestamp is None:
        raise BadParameter("Give the 'timestamp' to start at.")
    if positions is not None:
        start = "offset"
    spec = ScanSpec(
        topic=topic,
        partitions=_partitions(params.get("partitions", "")),
        start=start,  # type: ignore[arg-type]
        offset=offset if positions is None else None,
        timestamp_ms=timestamp,
        newest_n=int_param(params, "newest_n", limit, minimum=0, maximum=1_000_000) or 0,
        limit=limit,
        max_scanned=int_param(params, "max_scanned", 1_000_000, minimum=1, maximum=5_000_000) or 1_000_000,
        direction=direction,  # type: ignore[arg-type]
        offsets=positions,
    )
    filters = FilterSpec(
        substring=params.get("q") or None,
        regex=params.get("regex") or None,
        json_path=params.get("json_path") or None,
        json_value=params.get("json_value") or None,
        target=choice_param(params, "target", TARGETS) or "value",
        case_sensitive=params.get("case", "") in {"1", "true", "on"},
    )
    build_matcher(filters)  # a bad regex or JSON path is refused before anything is read
    return BrowseRequest(
        spec=spec,
        filters=filters,
        decode_key=choice_param(params, "decode_key", set(DECODINGS)) or "auto",
        decode_value=choice_param(params, "decode_value", set(DECODINGS)) or "auto",
        masker=masker,
        decoder=decoder,
    )


def shown(data: bytes | None, as_: str, note: PartNote | None) -> Decoded:
    """A key or value for display; one read by its schema is JSON text named by the schema's format."""
    if note is None or data is None:
        return decode(data, as_)
    if note.error is not None:
        return Decoded(format="hex", text=data.hex(" "), error=note.error)
    if as_ not in ("auto", "json"):
        return decode(data, as_)  # (of the decoded JSON text, as asked)
    d = decode(data, "json")
    return Decoded(format=note.format, text=d.text, json=d.json, error=d.error)


def row(r: Record, decode_key: str = "auto", decode_value: str = "auto") -> dict[str, Any]:
    masked = masked_parts(r)
    key_note, value_note = notes(r)
    key = _MASKED if "key" in masked else shown(r.key, decode_key, key_note)
    value = _MASKED if "value" in masked else shown(r.value, decode_value, value_note)
    schemas = {} if key_note is None and value_note is None else {
        "key_schema": key_note.as_json() if key_note else None, "value_schema": value_note.as_json() if value_note else None,
        "key_note": key.error}
    return {**schemas,
        "partition": r.partition,
        "offset": r.offset,
        "timestamp_ms": r.timestamp_ms,
        "timestamp": datetime.fromtimestamp(r.timestamp_ms / 1000, tz=UTC).isoformat() if r.timestamp_ms >= 0 else None,
        "timestamp_type": r.timestamp_type,
        "key": key.text if r.key is not None else None,
        "key_format": key.format,
        "value": value.text if r.value is not None else None,
        "value_format": value.format,
        "value_note": value.error,
        "headers": [{"key": k, "value": MARK if "header:" + k in masked else decode(v, "auto").text if v is not None else None}
                    for k, v in r.headers],
        "key_size": r.key_size,
        "value_size": r.value_size,
        "masked": list(masked),
    }


_MASKED = Decoded(format="masked", text=MARK)


def progress_dict(p: ScanProgress) -> dict[str, Any]:
    return {"scanned": p.scanned, "matched": p.matched, "positions": {str(k): v for k, v in sorted(p.positions.items())},
            "done": p.done, "stopped": p.stopped, "budget_exhausted": p.budget_exhausted, "reason": p.reason}


def time_budget(params: Mapping[str, str]) -> float:
    """Seconds an HTTP scan may read: MESSAGES_SCAN_TIME_BUDGET, or less when `time_budget_ms` asks for it.

    A request holds a web worker while it scans; the websocket's scans have Stop instead."""
    most = float(settings.MESSAGES_SCAN_TIME_BUDGET)
    asked = int_param(params, "time_budget_ms", minimum=100, maximum=max(100, int(most * 1000)))
    return most if asked is None else asked / 1000


def run_scan(cluster: str, req: BrowseRequest, on_progress: Callable[[ScanProgress], bool] | None = None,
             cancel: threading.Event | None = None, budget: float | None = None) -> tuple[list[Record], ScanProgress]:
    records, progress = scan(gateway.for_cluster(cluster), req.spec, req.matcher, on_progress=on_progress,
                             raw_matcher=req.raw_matcher, cancel=cancel, time_budget=budget)
    return req.masked(records), progress


def run_tail(cluster: str, req: BrowseRequest, on_records: Callable[[list[Record]], bool], stop: threading.Event,
             on_ready: Callable[[], None] | None = None) -> None:
    tail(gateway.for_cluster(cluster), req.spec.topic, req.spec.partitions, lambda records: on_records(req.masked(records)),
         stop, matcher=req.matcher, raw_matcher=req.raw_matcher, on_ready=on_ready)


def request_for(user: Any, cluster: str, topic: str, params: Mapping[str, str]) -> BrowseRequest:
    """A read as `user` may make it: masked where a policy says so."""
    return parse_request(topic, params, masker=masker_for(user, cluster, topic), decoder=decoder_for(cluster, topic))


def open_read(user: Any, cluster: str, topic: str, params: Mapping[str, str], how: str,
              client: str | None = None) -> BrowseRequest:
    """`request_for`, entered in the audit log (a page or API read, which starts at once)."""
    req = request_for(user, cluster, topic, params)
    audit_read(user, cluster, req, how, client)
    return req


def audit_read(user: Any, cluster: str, req: BrowseRequest, how: str, client: str | None = None) -> None:
    """One audit entry per page, scan, tail, export or API read (never one per record)."""
    spec, f = req.spec, req.filters
    details: dict[str, Any] = {
        "how": how, "partitions": "all" if spec.partitions is None else list(spec.partitions), "start": spec.start,
        "direction": spec.direction, "limit": spec.limit,
    }
    if spec.offset is not None:
        details["offset"] = spec.offset
    if spec.timestamp_ms is not None:
        details["timestamp_ms"] = spec.timestamp_ms
    if spec.offsets is not None:
        details["positions"] = ",".join(f"{p}:{o}" for p, o in spec.offsets)
    filters = {name: getattr(f, name) for name in ("substring", "regex", "json_path", "json_value") if getattr(f, name)}
    if filters:
        details["filters"] = {**filters, "target": f.target}
    if req.masker is not None:
        details["masked_by"] = list(req.masker.policies)
    if client:
        details["client"] = client
    audit(user, "read_messages", cluster=cluster, target=spec.topic, details=details)


def positions_param(p: ScanProgress) -> str:
    return ",".join(f"{k}:{v}" for k, v in sorted(p.positions.items()))


def page_bounds(records: list[Record], progress: ScanProgress, direction: str) -> tuple[str, str]:
    """(earlier, later): where the page before this one ends and where the page after it starts.

    Forward pages continue at the scan's positions; going back starts (exclusively) at the lowest
    offset shown per partition. Backward pages are the mirror image."""
    lowest: dict[int, int] = {}
    highest: dict[int, int] = {}
    for r in records:
        lowest[r.partition] = min(lowest.get(r.partition, r.offset), r.offset)
        highest[r.partition] = max(highest.get(r.partition, r.offset), r.offset + 1)
    continued = positions_param(progress)
    if direction == "forward":
        earlier = {**{p: o for p, o in progress.positions.items() if p not in lowest}, **lowest}
        return ",".join(f"{k}:{v}" for k, v in sorted(earlier.items())), continued
    later = {**{p: o for p, o in progress.positions.items() if p not in highest}, **highest}
    return continued, ",".join(f"{k}:{v}" for k, v in sorted(later.items()))


# Producing: what a form or API call asks to write (services.produce_message writes it) ----------------


def encode(text: str | None, encoding: str, what: str) -> bytes | None:
    if text is None:
        return None
    if encoding == "text":
        return text.encode()
    if encoding == "json":
        try:
            return json.dumps(json.loads(text), separators=(",", ":")).encode()
        except ValueError as exc:
            raise BadParameter(f"The {what} is not valid JSON: {exc}.") from None
    if encoding == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            raise BadParameter(f"The {what} is not valid base64.") from None
    if encoding == "hex":
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise BadParameter(f"The {what} is not valid hex.") from None
    raise BadParameter(f"The encoding must be one of {', '.join(sorted(ENCODINGS))}, not '{encoding[:50]}'.")


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    headers = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise BadParameter(f"Header line {number} must look like name=value.")
        headers.append((key.strip(), value.encode()))
    return headers


def produced_parts(cluster: str, topic: str, d: dict[str, Any]) -> tuple[bytes | None, bytes | None]:
    """(value, key) of a produce request: encoded with the uploaded schemas it names, else as its encoding says."""
    value, key = d.get("value"), d.get("key")
    value_bytes: bytes | None
    key_bytes: bytes | None
    if d.get("value_schema") is not None and value is not None:
        value_bytes = schemas.encode_with(cluster, topic, "value", d["value_schema"], value, d.get("value_schema_id"))
    else:
        value_bytes = encode(value, d.get("encoding") or "text", "value")
    if d.get("key_schema") is not None and key is not None:
        key_bytes = schemas.encode_with(cluster, topic, "key", d["key_schema"], key, d.get("key_schema_id"))
    else:
        key_bytes = key.encode() if key is not None else None
    return value_bytes, key_bytes
