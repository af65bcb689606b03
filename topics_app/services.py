"""Changes to topics, their messages and the masking policies (operator or admin).

One function per change: it checks the request, calls the gateway and writes the change's one
audit entry, so a page, the API and the admin record the same entry for the same change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from console import error_responses, gateway, snapshots
from console.audit import audited
from console.audit import record as audit
from console.auth import may, require
from console.errors import BadParameter, ConsoleError, Forbidden
from console.gateway.errors import ClusterUnavailable, NotFound
from console.gateway.messages.produce import produce
from console.gateway.messages.records import Produced
from console.gateway.messages.scan import scan
from console.gateway.messages.scan_spec import ScanSpec
from console.gateway.types import ConfigValue
from console.snapshots import Snapshot, TopicState
from topics_app import data_loss, masking, schema_formats, schema_wire, schemas
from topics_app.masking_policies import masker_for
from topics_app.models import MaskingPolicy, TopicSchema
from topics_app.reads import topic
from topics_app.validation import check_counts, check_topic_name


@dataclass
class Outcome:
    dry_run: bool
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def _audited(user: Any, action: str, cluster: str, target: str, details: dict[str, Any], dry_run: bool,
             change: Callable[[], Outcome]) -> Outcome:
    """Run `change` and record it with what it learned; a dry run records nothing (console.audit)."""
    with audited(user, action, cluster=cluster, target=target, dry_run=dry_run, details=details) as entry:
        outcome = change()
        entry.update(outcome.details)
    return outcome


def _snapshot(cluster: str) -> Snapshot:
    snap = snapshots.reachable(snapshots.live(cluster))
    if snap is None:
        raise ClusterUnavailable(f"Cluster '{cluster}' is not reachable right now; nothing was changed.")
    return snap


# Topics --------------------------------------------------------------------------------------------


def create_topic(user: Any, cluster: str, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
                 dry_run: bool) -> Outcome:
    details = {"partitions": partitions, "replication_factor": replication_factor, "configs": configs}
    return _audited(user, "create_topic", cluster, name, details, dry_run,
                    lambda: _create_topic(user, cluster, name, partitions, replication_factor, configs, dry_run))


def _create_topic(user: Any, cluster: str, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
                  dry_run: bool) -> Outcome:
    require(user, "topic.create", cluster, topic=name)  # (a scoped user creates only names in their scope)
    snap = _snapshot(cluster)
    check_topic_name(name, snap.topics)
    check_counts(partitions, replication_factor, len(snap.live_broker_ids()))
    gateway.for_cluster(cluster).create_topic(name, partitions, replication_factor, configs, validate_only=dry_run)
    if not dry_run:
        snapshots.note_change(cluster, {f"topic:{name}": partitions})
    verb = "Kafka accepts" if dry_run else "Created"
    return Outcome(dry_run, f"{verb} topic '{name}' with {partitions} partition{'s' if partitions != 1 else ''}, "
                            f"replication factor {replication_factor}.")


def topic_configs(cluster: str, name: str) -> list[ConfigValue]:
    return gateway.for_cluster(cluster).describe_topic_configs(name)


def config_diff(current: list[ConfigValue], set_values: dict[str, str], delete: list[str]) -> list[dict[str, Any]]:
    by_name = {c.name: c for c in current}
    both = sorted(set(set_values) & set(delete))
    if both:
        raise BadParameter(f"Config {both[0]} is both set and removed; name it in one of the two; nothing was changed.")
    unknown = sorted((set(set_values) | set(delete)) - by_name.keys())
    if unknown:
        raise BadParameter(f"Unknown topic config{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}.")
    read_only = sorted(k for k in set_values if by_name[k].is_read_only)
    if read_only:
        raise BadParameter(f"Read-only config{'s' if len(read_only) > 1 else ''}: {', '.join(read_only)}.")
    diff = []
    for key, value in sorted(set_values.items()):
        old = by_name[key]
        if old.value != value or not old.overridden:
            diff.append({"name": key, "old": old.value, "new": value, "old_source": old.source})
    for key in sorted(delete):
        old = by_name[key]
        if old.overridden:
            diff.append({"name": key, "old": old.value, "new": None, "old_source": old.source})
    return diff


def alter_configs(user: Any, cluster: str, name: str, set_values: dict[str, str], delete: list[str], dry_run: bool) -> Outcome:
    """Change only the keys named: `set_values` set, `delete` returned to their default. A key whose
    value is already the one asked for is not sent, so Kafka changes exactly what the diff shows.
    A change that deletes records the topic holds now (`data_loss`) needs the delete role."""
    return _audited(user, "alter_topic_configs", cluster, name, {"set": set_values, "delete": delete}, dry_run,
                    lambda: _alter_configs(user, cluster, name, set_values, delete, dry_run))


def _alter_configs(user: Any, cluster: str, name: str, set_values: dict[str, str], delete: list[str], dry_run: bool) -> Outcome:
    t = topic(_snapshot(cluster), name)
    gw = gateway.for_cluster(cluster)
    current = gw.describe_topic_configs(name)
    diff = config_diff(current, set_values, delete)
    changed = {d["name"] for d in diff}
    set_values = {k: v for k, v in set_values.items() if k in changed}
    delete = [k for k in delete if k in changed]
    deleting = data_loss.deleting_changes(
        current, set_values, delete, holds_older_than=lambda ms: _holds_older_than(cluster, t, ms),
        holds_more_than=lambda size: any(p.size is None or p.size > size for p in t.partitions))
    # Whoever may delete the topic may delete its records this way too; nobody else.
    if deleting and not may(user, "topic.delete", cluster, topic=name):
        raise Forbidden(f"This change deletes records topic '{name}' holds now ({'; '.join(deleting)}), so it needs the "
                        "right to delete the topic (the topic.delete action, which admins have); nothing was changed.")
    if not diff:
        return Outcome(dry_run, "Nothing to change: the configs already have these values.", {"diff": []})
    # Kafka validates first (dry run) either way, so a bad value never half-applies.
    gw.alter_topic_configs(name, set_values, delete, validate_only=True)
    if not dry_run:
        gw.alter_topic_configs(name, set_values, delete, validate_only=False)
    verb = "Kafka accepts" if dry_run else "Applied"
    warning = f" It deletes records the topic holds now: {'; '.join(deleting)}." if deleting else ""
    details: dict[str, Any] = {"diff": diff, **({"deletes_records": deleting} if deleting else {})}
    return Outcome(dry_run, f"{verb} {len(diff)} config change{'s' if len(diff) != 1 else ''} to topic '{name}'.{warning}",
                   details)


def _holds_older_than(cluster: str, t: TopicState, ms: int) -> bool:
    """Some partition holds a record older than `ms`: Kafka's first offset at the cutoff time lies past its start."""
    gw = gateway.for_cluster(cluster)
    scope = [(t.name, p.partition) for p in t.partitions]
    starts = gw.list_offsets(scope, "earliest")
    cutoff = gw.offsets_for_time(scope, int(time.time() * 1000) - ms)
    return any(cutoff.get(tp, 0) > starts.get(tp, 0) for tp in scope)


def add_partitions(user: Any, cluster: str, name: str, total: int, dry_run: bool) -> Outcome:
    return _audited(user, "add_partitions", cluster, name, {"total": total}, dry_run,
                    lambda: _add_partitions(cluster, name, total, dry_run))


def _add_partitions(cluster: str, name: str, total: int, dry_run: bool) -> Outcome:
    current = len(topic(_snapshot(cluster), name).partitions)
    if total <= current:
        raise BadParameter(f"Topic '{name}' has {current} partitions; the new count must be more than that, not {total}.")
    gateway.for_cluster(cluster).add_partitions(name, total, validate_only=dry_run)
    if not dry_run:
        snapshots.note_change(cluster, {f"topic:{name}": total})
    verb = "Kafka accepts going" if dry_run else "Went"
    return Outcome(dry_run, f"{verb} from {current} to {total} partitions on topic '{name}'. Keys now map to "
                            "different partitions: per-key ordering holds only for messages written from now on.",
                   {"old": current, "new": total})


def purge_records(user: Any, cluster: str, name: str, before: dict[int, int], everything: bool, dry_run: bool) -> Outcome:
    """Delete records below an offset per partition named in `before` (-1: all of that partition), or
    every record of every partition with `everything`. One of the two must be asked for explicitly:
    a purge that names nothing deletes nothing."""
    details = {"before": "all" if everything else {str(k): v for k, v in before.items()}}
    return _audited(user, "purge_records", cluster, name, details, dry_run,
                    lambda: _purge_records(cluster, name, before, everything, dry_run))


def _purge_records(cluster: str, name: str, before: dict[int, int], everything: bool, dry_run: bool) -> Outcome:
    if everything and before:
        raise BadParameter("Give either the partitions and offsets to delete below ('offsets') or every record ('all'), "
                           "not both; nothing was deleted.")
    if not everything and not before:
        raise BadParameter("Name the partitions and the offsets to delete below ('offsets'), or ask for every record of "
                           "every partition explicitly ('all'); nothing was deleted.")
    t = topic(_snapshot(cluster), name)
    numbers = [p.partition for p in t.partitions]
    if everything:
        before = dict.fromkeys(numbers, -1)
    for n in before:
        if n not in numbers:
            raise BadParameter(f"Topic '{name}' has no partition {n}; it has 0-{len(numbers) - 1}.")
    # An action may ask Kafka: the offsets must be the current ones, not the last sample's.
    gw = gateway.for_cluster(cluster)
    ends = gw.list_offsets([(name, n) for n in before], "latest")
    starts = gw.list_offsets([(name, n) for n in before], "earliest")
    for n, offset in before.items():
        end, start = ends.get((name, n), 0), starts.get((name, n), 0)
        if offset < -1 or offset > end:
            raise BadParameter(f"Offset {offset} is outside partition {n} (offsets {start} to {end}); use -1 for all.")
    if dry_run:
        count = sum(
            max(0, ends.get((name, n), 0) - starts.get((name, n), 0)) if o == -1 else max(0, o - starts.get((name, n), 0))
            for n, o in before.items()
        )
        return Outcome(True, f"About {count} records of topic '{name}' would be deleted from "
                             f"{len(before)} partition{'s' if len(before) != 1 else ''}.", {"records": count})
    low = gateway.for_cluster(cluster).delete_records(name, before)
    snapshots.note_change(cluster, {f"offsets:{name}": 1})
    return Outcome(False, f"Deleted records of topic '{name}'; partitions now start at "
                          + ", ".join(f"{p}: {o}" for p, o in sorted(low.items())) + ".",
                   {"start_offsets": {str(p): o for p, o in low.items()}})


def delete_topic(user: Any, cluster: str, name: str, confirmation: str) -> Outcome:
    return _audited(user, "delete_topic", cluster, name, {}, False, lambda: _delete_topic(cluster, name, confirmation))


def _delete_topic(cluster: str, name: str, confirmation: str) -> Outcome:
    topic(_snapshot(cluster), name)
    if confirmation != name:
        raise BadParameter(f"To delete topic '{name}', type its name exactly; nothing was deleted.")
    gateway.for_cluster(cluster).delete_topic(name)
    snapshots.note_change(cluster, {f"topic:{name}": 0})
    return Outcome(False, f"Deleted topic '{name}'.")


# Messages ------------------------------------------------------------------------------------------


def produce_message(user: Any, cluster: str, topic: str, value: bytes | None, key: bytes | None,
                    headers: list[tuple[str, bytes]], partition: int | None) -> Produced:
    details = {"partition": partition, "key_size": len(key or b""), "value_size": len(value or b""), "headers": len(headers)}
    try:
        produced = _produce_seeing_own_changes(cluster, topic, value, key, headers, partition)
    except ConsoleError as exc:
        audit(user, "produce", cluster=cluster, target=topic, details={**details, "error": error_responses.message(exc)}, outcome="failed")
        raise
    audit(user, "produce", cluster=cluster, target=topic, details={**details, "offset": produced.offset,
                                                                  "written_to": produced.partition})
    return produced


def _produce_seeing_own_changes(cluster: str, topic: str, value: bytes | None, key: bytes | None,
                                headers: list[tuple[str, bytes]], partition: int | None) -> Produced:
    """Produce, retrying "no such topic" (or partition) while a creation or growth the console just made
    is pending: Kafka's brokers learn of a new topic from the controller a moment after it answers, so
    a produce right after a create may reach a broker that does not know it yet."""
    deadline = time.monotonic() + settings.READ_YOUR_WRITES_WAIT
    while True:
        try:
            return produce(gateway.for_cluster(cluster), topic, value, key=key, headers=headers or None, partition=partition)
        except NotFound:
            expected = snapshots.noted(cluster, f"topic:{topic}")
            if not expected or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def republish(user: Any, cluster: str, topic: str, partition: int, offset: int, target: str) -> Produced:
    """Produce a copy of one message (key, value, headers) to the same or another topic.

    A message with parts masked for this user is refused: copying it clear would put the masked
    values into a topic the user may be able to read unmasked, and copying it masked would write
    "****" into real data. An exempt user (or one no policy masks here) republishes it as it is.
    The copy is recorded as a produce to the target topic and, once written, as a republish.
    """
    require(user, "messages.read", cluster, topic=topic)  # (the route checked producing to the source topic)
    require(user, "messages.produce", cluster, topic=target)
    spec = ScanSpec(topic=topic, partitions=(partition,), start="offset", offset=offset, limit=1, max_scanned=1)
    records, _ = scan(gateway.for_cluster(cluster), spec, None)
    if not records or records[0].offset != offset:
        raise BadParameter(f"There is no message at offset {offset} of partition {partition} of '{topic}'.")
    original = records[0]
    masker = masker_for(user, cluster, topic)
    hidden = masking.masked_parts(masker.apply(original)) if masker is not None else ()
    if hidden:
        audit(user, "republish", cluster=cluster, target=target, outcome="refused",
              details={"from_topic": topic, "from_partition": partition, "from_offset": offset, "masked": list(hidden)})
        raise Forbidden(f"Offset {offset} of partition {partition} of '{topic}' has masked parts for you "
                        f"({', '.join(hidden)}), so it cannot be republished: the copy would show them in clear. "
                        "A user exempt from the masking policy can republish it.")
    headers = [(k, v or b"") for k, v in original.headers]
    produced = produce_message(user, cluster, target, original.value, original.key, headers, None)
    audit(user, "republish", cluster=cluster, target=target,
          details={"from_topic": topic, "from_partition": partition, "from_offset": offset, "offset": produced.offset})
    return produced


# Schemas records are decoded and encoded with (operator) ---------------------------------------------


def _schema_ids(value: Any) -> list[int]:
    if value is None or value == "":
        return []
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list):
        raise BadParameter("'schema_ids' must be a list of Confluent schema ids, such as [7, 12].")
    ids: list[int] = []
    for item in items:
        try:
            number = int(item) if not isinstance(item, (bool, float)) else -1
        except (TypeError, ValueError):
            number = -1
        if not 0 <= number <= schema_wire.MAX_SCHEMA_ID:
            raise BadParameter(f"'schema_ids': '{str(item)[:20]}' is not a schema id (a whole number from 0 to {schema_wire.MAX_SCHEMA_ID}).")
        ids.append(number)
    return sorted(set(ids))


def upload_schema(user: Any, cluster: str, topic_name: str, part: str, fmt: str, name: str, text: str,
                  message_type: str = "", schema_ids: Any = None) -> TopicSchema:
    """Check the schema (a bad one is a sentence naming its problem), store it, audit it."""
    require(user, "topic.schemas", cluster, topic_name)
    if part not in schemas.PARTS:
        raise BadParameter(f"'part' must be key or value, not '{str(part)[:20]}'.")
    name = (name or "").strip()[:200] or part + {"avro": ".avsc", "protobuf": ".proto"}.get(fmt, ".json")
    ids = _schema_ids(schema_ids)
    codec, compiled = schema_formats.check(fmt, text, name, message_type or "")
    taken = {i: r for r in schemas.rows_of(cluster, topic_name) if r.part == part for i in r.schema_ids or ()}
    clash = sorted(i for i in ids if i in taken)
    if clash:
        raise BadParameter(f"Schema id {clash[0]} is already mapped to '{taken[clash[0]].name}' for this topic's {part}; "
                           "remove that schema first.")
    row = TopicSchema.objects.create(cluster=cluster, topic=topic_name, part=part, format=fmt, name=name, text=text,
                                     message_type=codec.message_type, compiled=compiled, schema_ids=ids,
                                     uploaded_by=getattr(user, "username", "") or "")
    audit(user, "upload_schema", cluster=cluster, target=topic_name,
          details={"id": row.pk, "part": part, "format": fmt, "name": name, "message_type": codec.message_type,
                   "schema_ids": ids})
    return row


def delete_schema(user: Any, cluster: str, topic_name: str, pk: int) -> None:
    require(user, "topic.schemas", cluster, topic_name)
    row = schemas.schema_row(cluster, topic_name, pk)
    details = {"id": pk, "part": row.part, "format": row.format, "name": row.name, "schema_ids": row.schema_ids}
    row.delete()
    audit(user, "delete_schema", cluster=cluster, target=topic_name, details=details)


# Masking policies (admin) ---------------------------------------------------------------------------

POLICY_FIELDS = ("cluster", "topic_kind", "topic_pattern", "applies_to", "exempt", "targets", "enabled")


def policy_details(p: MaskingPolicy) -> dict[str, Any]:
    return {"cluster": p.cluster, "topic_kind": p.topic_kind, "topic_pattern": p.topic_pattern, "applies_to": p.applies_to,
            "exempt": p.exempt, "targets": p.targets, "enabled": p.enabled}


def _checked_policy(d: dict[str, Any]) -> dict[str, Any]:
    """The fields as stored, each checked (a 400 naming the field when wrong)."""
    masking.check_topic_pattern(d["topic_kind"], d["topic_pattern"])
    return {**d, "cluster": masking.check_cluster(d["cluster"]), "applies_to": masking.check_names(d["applies_to"], "applies_to"),
            "exempt": masking.check_names(d["exempt"], "exempt"), "targets": masking.check_targets(d["targets"])}


def _save_policy(policy: MaskingPolicy, values: dict[str, Any]) -> None:
    for name, value in values.items():
        setattr(policy, name, value)
    try:
        with transaction.atomic():
            policy.save()
    except IntegrityError:
        raise BadParameter(f"'name': a masking policy named '{values.get('name', policy.name)}' already exists.") from None


def create_masking_policy(user: Any, values: dict[str, Any]) -> MaskingPolicy:
    d = _checked_policy(values)
    with audited(user, "create_masking_policy", target=d["name"], details={k: d[k] for k in POLICY_FIELDS}) as entry:
        policy = MaskingPolicy()
        _save_policy(policy, d)
        entry["id"] = policy.pk
    return policy


def update_masking_policy(user: Any, policy: MaskingPolicy, given: dict[str, Any]) -> MaskingPolicy:
    """Change the fields `given`; the others keep their values."""
    d = _checked_policy({"name": policy.name, **policy_details(policy), **given})
    with audited(user, "update_masking_policy", target=policy.name,
                 details={"id": policy.pk, "before": policy_details(policy), "set": given}):
        _save_policy(policy, d)
    return policy


def delete_masking_policy(user: Any, policy: MaskingPolicy) -> None:
    with audited(user, "delete_masking_policy", target=policy.name, details={"id": policy.pk, **policy_details(policy)}):
        policy.delete()


def save_masking_policy_from_admin(user: Any, policy: MaskingPolicy, change: bool) -> None:
    """The admin's save: its form ran the model's clean() (the API's checks) before this."""
    policy.save()
    audit(user, "update_masking_policy" if change else "create_masking_policy", target=policy.name,
          details={"id": policy.pk, "via": "admin", **policy_details(policy)})


def delete_masking_policy_from_admin(user: Any, policy: MaskingPolicy) -> None:
    details = {"id": policy.pk, "via": "admin", **policy_details(policy)}
    policy.delete()
    audit(user, "delete_masking_policy", target=policy.name, details=details)


def delete_masking_policies_from_admin(user: Any, policies: QuerySet[MaskingPolicy]) -> None:
    """The admin's bulk delete of a selection: one entry per policy."""
    gone = [(p.name, {"id": p.pk, "via": "admin", **policy_details(p)}) for p in policies]
    policies.delete()
    for name, details in gone:
        audit(user, "delete_masking_policy", target=name, details=details)
