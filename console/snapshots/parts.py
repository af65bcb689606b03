"""The stored parts format: a snapshot in Redis is a header plus one part per topic ("t:<name>")
and per group ("g:<id>"), each compressed; a topic's part starts with its summary and tally so a
reading process takes the topic without parsing its partitions (StoredTopic), and a group's part
is parsed when first asked for (GroupsRead)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from dataclasses import fields
from itertools import chain
from typing import Any

import lz4.block
import orjson

from console.errors import PartUnreadable
from console.snapshots.encoding import CONTENT_OPTIONS
from console.snapshots.model import GroupState, TopicState, group_from_dict, json_default, partition_from_dict
from console.snapshots.tallies import TopicTally

# A topic's fields, in the order orjson writes them (StoredTopic compares them; TopicBytes writes them).
TOPIC_FIELDS = tuple(f.name for f in fields(TopicState))


# zlib's preset dictionary for a group's part: the field names and the common values of a group's
# JSON, which a part of a few hundred bytes otherwise spells out once each (the most frequent last:
# nearest). Never changed once parts are stored with it: a part names its dictionary (zlib's DICTID,
# its Adler-32), and a new one is added to GROUP_DICTIONARIES, not put in this one's place.
GROUP_DICTIONARY = (
    b'"instance_id":null,"epoch":null,"target_assignment":null,"coordinator":,"generation":null,'
    b'"broker_lag":{},"error":null,"PreparingRebalance","CompletingRebalance","Empty","Dead","share",'
    b'"cooperative-sticky","sticky","roundrobin","uniform","consumer-","REWIND","STALL","STOP","ERR",'
    b'"WARN",{"group_id":"","state":"Stable","protocol_type":"consumer","group_type":"classic",'
    b'"assignor":"range","members":[{"member_id":"","client_id":"","host":"/","assignment":[["",0],["",1]]'
    b'}],"offsets":{"":0},"status":"OK","time_lag":0.0,"lag_keys":["",""],"lag_status":["OK","OK"],'
    b'"lag_seconds":[0.0,null,0.0]}')
GROUP_DICTIONARIES = {zlib.adler32(GROUP_DICTIONARY): GROUP_DICTIONARY}
_FDICT = 0x20  # (zlib's header: a preset dictionary's Adler-32 follows the first two bytes)


def group_part(g: GroupState) -> bytes:
    """A group as its stored part: its JSON, compressed (zlib's fastest level, with
    GROUP_DICTIONARY). The watcher holds every group's part to store the next version's changes
    against, and the sampling process sends them, so they are kept compressed (the dictionary
    shrinks small parts further); Redis keeps them so too. `group_of_part` reads every form (JSON
    starts with "{", zlib with "x"; a part compressed before the dictionary has none)."""
    packer = zlib.compressobj(1, zdict=GROUP_DICTIONARY)
    return packer.compress(orjson.dumps(g, default=json_default, option=CONTENT_OPTIONS)) + packer.flush()


def _inflate(raw: bytes) -> bytes:
    """A zlib part's JSON, with the preset dictionary its header names (when it names one)."""
    if len(raw) < 6 or not raw[1] & _FDICT:
        return zlib.decompress(raw)
    dictionary = GROUP_DICTIONARIES.get(int.from_bytes(raw[2:6], "big"))
    if dictionary is None:
        raise ValueError("a stored group part was compressed with a dictionary this version does not know")
    unpacker = zlib.decompressobj(zdict=dictionary)
    return unpacker.decompress(raw) + unpacker.flush()


_LZ4 = b"L"  # (what starts a part compressed with LZ4: JSON starts with "{", zlib with "x")
SUMMARY = b"S"  # (what starts a topic's part with its summary before it: `topic_part`)


def topic_part(raw: bytes, summary: bytes | None = None) -> bytes:
    """A topic's JSON as its stored part: compressed with LZ4 (its block, with its size, after a
    marker byte). The watcher holds every topic's part to serialise the next version of a changed
    topic against (TopicBytes), and web processes hold them to read the next version's changes
    against, so they are kept compressed. LZ4 rather than the groups' zlib: topics change many
    times a second on a large cluster, and LZ4 makes and reads a part many times faster.

    With `summary` (`topic_summary`: the topic's fields but its partitions, and its tally), the
    part starts with it, uncompressed, after a marker byte and its length: a reading process takes
    the topic from the summary and parses its partitions only when asked for them (StoredTopic)."""
    packed = _LZ4 + lz4.block.compress(raw, store_size=True)
    if summary is None:
        return packed
    return SUMMARY + len(summary).to_bytes(4, "big") + summary + packed


def part_json(raw: bytes) -> bytes:
    """A stored part's JSON: as it is, or unpacked (a topic's `topic_part`, a group's `group_part`)."""
    head = raw[:1]
    if head == b"{":
        return raw
    if head == SUMMARY:
        return lz4.block.decompress(memoryview(raw)[6 + int.from_bytes(raw[1:5], "big"):])
    if head == _LZ4:
        return lz4.block.decompress(memoryview(raw)[1:])
    return _inflate(raw)


def _flat(counts: dict[int, int]) -> list[int]:
    return list(chain.from_iterable(counts.items()))


def _pairs(flat: list[int]) -> dict[int, int]:
    each = iter(flat)
    return dict(zip(each, each))  # noqa: B905 - (pairs of one list: the same iterator twice)


def topic_summary(t: TopicState, tally: TopicTally, before: TopicTally | None = None, part: bytes | None = None) -> bytes:
    """What a topic's stored part says before its partitions (`topic_part`): its own fields, its
    tally and its partitions' end offsets (number, end, ...), as one JSON array (StoredTopic.of_part
    reads it): a group's lag needs only the end offsets of its topics, and parsing their partitions
    for them made each version's group rows cost most of a groups list sorted by lag.

    Given the tally `before` and the part it was stored with, the JSON of those of the tally's three
    brokers' dicts that are the same dicts as `before`'s is copied from that part rather than
    written again: TopicTally.changed shares the dicts a change leaves as they were, and writing
    them is most of a summary's cost."""
    dicts = (tally.led, tally.led_under_replicated, tally.hosted)
    made: list[bytes | None] = [None, None, None]
    if before is not None and part is not None and part[:1] == SUMMARY \
            and (dicts[0] is before.led or dicts[1] is before.led_under_replicated or dicts[2] is before.hosted):
        # (the summary ends with the three dicts' flat lists of numbers: the last three "[")
        end = 5 + int.from_bytes(part[1:5], "big") - 1
        for i, old in ((2, before.hosted), (1, before.led_under_replicated), (0, before.led)):
            start = part.rindex(b"[", 5, end)
            if dicts[i] is old:
                made[i] = part[start:end]
            end = start - 1
    ends = [x for p in t.partitions for x in (p.partition, p.end_offset)]
    head = orjson.dumps([t.name, t.internal, t.min_isr, t.produce_rate, tally.partitions, tally.under_replicated,
                         tally.offline, tally.under_min_isr, tally.replication_factor, tally.size, tally.messages, ends])
    made = [m if m is not None else orjson.dumps(_flat(d)) for m, d in zip(made, dicts, strict=True)]
    return b"".join((head[:-1], b",", made[0], b",", made[1], b",", made[2], b"]"))  # type: ignore[arg-type]


class _StoredPartitions:
    """A StoredTopic's partitions: parsed from its part when first asked for, then kept by the topic
    (in its __dict__, which this descriptor without __set__ gives way to)."""

    def __get__(self, obj: StoredTopic | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            parts = [partition_from_dict(p) for p in orjson.loads(part_json(obj.part))["partitions"]]
        except (ValueError, TypeError, KeyError, IndexError, lz4.block.LZ4BlockError) as exc:  # (orjson's decode error is a ValueError)
            raise PartUnreadable(f"The stored part of topic '{obj.name[:200]}' cannot be read ({exc}); "
                                 "the watcher writes the snapshot again when it restarts.") from exc
        obj.__dict__["partitions"] = parts  # (two threads may both parse it: either list will do)
        return parts


class StoredTopic(TopicState):
    """A topic as a reading process (web, Celery) takes it from the store: its fields and its tally
    from the summary the watcher stored with its part (`topic_summary`), its partitions parsed when
    first asked for: the overview and the topics list need only the tallies of the many topics
    that change, and parsing and walking their partitions would be most of a web process's work.
    It equals the TopicState it was stored from."""

    partitions = _StoredPartitions()  # type: ignore[assignment]
    part: bytes = b""  # (its stored part; one made by `replace` holds its partitions instead)

    @classmethod
    def of_part(cls, raw: bytes) -> StoredTopic:
        """The topic of a part with its summary (ValueError when the summary cannot be read: the
        store's reader takes the snapshot as unreadable, StoreUnreadable)."""
        end = 5 + int.from_bytes(raw[1:5], "big")
        s = orjson.loads(memoryview(raw)[5:end])
        t = cls.__new__(cls)
        try:
            t.__dict__.update(name=s[0], internal=s[1], min_isr=s[2], produce_rate=s[3], part=raw, stored_ends=s[11],
                              stored_tally=TopicTally(s[4], s[5], s[6], s[7], _pairs(s[12]), _pairs(s[13]), _pairs(s[14]),
                                                      s[8], s[9], s[10]))
        except (TypeError, KeyError, IndexError) as exc:
            raise ValueError(f"a topic's stored summary is not one this version writes ({exc})") from exc
        return t

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TopicState):
            return all(getattr(self, name) == getattr(other, name) for name in TOPIC_FIELDS)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


# (the content without its topics and groups, each topic's JSON under "t:<name>" and each group's under "g:<id>")
ContentParts = tuple[bytes, dict[str, bytes]]
TOPIC_PART, GROUP_PART = "t:", "g:"
# In the header: stored in parts, groups apart, topics with their summaries (`topic_part`, with their
# end offsets); a header without it, or with an earlier one, is from an older version (read as none
# until the watcher rewrites it).
PARTS_FORMAT = 4


class HeldGroup:
    """A group's stored part and, once something asked for it, its GroupState (`GroupsRead`)."""

    __slots__ = ("raw", "value")

    def __init__(self, raw: bytes, value: GroupState | None = None) -> None:
        self.raw = raw
        self.value = value


class GroupsRead(Mapping[str, GroupState]):
    """A snapshot's groups as a reading process (web, Celery) holds them: each group's stored part,
    parsed into its GroupState when something first asks for that group: each sampling pass
    changes nearly every group, and the live pages but the groups list ask for no group (that one
    for the page it shows), so parsing every changed group on each read would be wasted work.
    A group the next version did not change keeps
    its holder (`held`), parsed or not, so it is parsed once whatever number of versions hold it. In
    the order the parts were given (the store gives them in name order)."""

    __slots__ = ("_held",)

    def __init__(self, held: dict[str, HeldGroup]) -> None:
        self._held = held

    @classmethod
    def of(cls, groups: Mapping[str, GroupState]) -> GroupsRead:
        """Groups already built (their parts made from them)."""
        if isinstance(groups, GroupsRead):
            return groups
        return cls({gid: HeldGroup(group_part(g), g) for gid, g in groups.items()})

    def held(self) -> dict[str, HeldGroup]:
        """Each group's holder (shared with the versions that keep it: not to be changed)."""
        return self._held

    def __getitem__(self, gid: str) -> GroupState:
        held = self._held[gid]
        value = held.value
        if value is None:  # (two threads may both parse it: either object will do)
            try:
                value = held.value = group_of_part(held.raw)
            except (ValueError, TypeError, KeyError, zlib.error) as exc:  # (orjson's decode error is a ValueError)
                raise PartUnreadable(f"The stored part of consumer group '{gid[:200]}' cannot be read ({exc}); "
                                     "the watcher writes the snapshot again when it restarts.") from exc
        return value

    def __contains__(self, gid: object) -> bool:
        return gid in self._held

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def __repr__(self) -> str:
        return f"GroupsRead({len(self._held)} groups)"


def group_holders(groups: Mapping[str, GroupState]) -> Mapping[str, object]:
    """Each group's holder: an object that stays the same while the group is the same from one
    snapshot version to the next (a reading process's HeldGroup, kept while its stored part is; a
    built snapshot's GroupState itself), so that comparing two versions' holders by identity tells
    which groups a version changed without parsing any."""
    return groups.held() if isinstance(groups, GroupsRead) else groups


def group_of_part(raw: bytes) -> GroupState:
    """A group from its stored part (`group_part`: compressed), or from its plain JSON."""
    return group_from_dict(orjson.loads(part_json(raw)))


def topic_of_part(raw: bytes) -> TopicState:
    """A topic from its stored part (`topic_part`: compressed; with its summary, a StoredTopic),
    or from its plain JSON."""
    if raw[:1] == SUMMARY:
        return StoredTopic.of_part(raw)
    t = orjson.loads(part_json(raw))
    return TopicState(name=t["name"], internal=t["internal"], partitions=[partition_from_dict(p) for p in t["partitions"]],
                      min_isr=t.get("min_isr"), produce_rate=t.get("produce_rate"))


def header_with_format(header: bytes) -> bytes:
    """The header marked as stored in parts with the groups apart (`PARTS_FORMAT`)."""
    return b'{"parts":%d,' % PARTS_FORMAT + header[1:] if header != b"{}" else b'{"parts":%d}' % PARTS_FORMAT

