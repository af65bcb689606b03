"""MirrorMaker 2's records, decoded as Kafka's mirror-client writes them (Checkpoint.java, Heartbeat.java):
Kafka's protocol types, big-endian; a STRING is an INT16 length and UTF-8 bytes.

A checkpoint's key is (group STRING, topic STRING, partition INT32), the topic being the remote topic
on the target; its value is a header (version INT16, only 0 exists) and (upstreamOffset INT64,
offset INT64, metadata STRING). A record that does not decode is skipped by the caller, never fatal:
the checkpoints topic is an ordinary topic anyone may write to.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass


class Undecodable(ValueError):
    pass


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str  # the remote topic on the target cluster
    partition: int
    upstream_offset: int  # the group's committed offset on the source
    downstream_offset: int  # that offset translated to the target's remote topic
    metadata: str


class _Reader:
    def __init__(self, raw: bytes) -> None:
        self.raw, self.at = raw, 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.raw):
            raise Undecodable("the record ends early")
        (value,) = struct.unpack_from(fmt, self.raw, self.at)
        self.at += size
        return int(value)

    def string(self) -> str:
        length = self.take(">h")
        if length < 0 or self.at + length > len(self.raw):
            raise Undecodable("a string runs past the record's end")
        text = self.raw[self.at:self.at + length].decode("utf-8", errors="replace")
        self.at += length
        return text


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    if not key or not value:
        raise Undecodable("a checkpoint has a key and a value")
    k, v = _Reader(key), _Reader(value)
    group, topic, partition = k.string(), k.string(), k.take(">i")
    version = v.take(">h")
    if version != 0:
        raise Undecodable(f"checkpoint version {version} is not known (0 is)")
    upstream, downstream = v.take(">q"), v.take(">q")
    return Checkpoint(group, topic, partition, upstream, downstream, v.string())


def encode_checkpoint(c: Checkpoint) -> tuple[bytes, bytes]:
    """The key and value Kafka's MirrorCheckpointTask writes for `c` (tests and the codec's own checks)."""
    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack(">h", len(raw)) + raw

    key = s(c.group) + s(c.topic) + struct.pack(">i", c.partition)
    value = struct.pack(">hqq", 0, c.upstream_offset, c.downstream_offset) + s(c.metadata)
    return key, value
