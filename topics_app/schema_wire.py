"""Confluent's wire format: magic byte 0, a 4-byte big-endian schema id, then the encoded record.

Protobuf records add, after the id, the path of the record's message type in its schema file as
zigzag varints: their count, then the indexes ([0], the first message type, is written as one 0).
Pure functions, no Django.
"""

from __future__ import annotations

import struct

MAGIC = 0
HEADER = 5  # magic byte + schema id
MAX_INDEXES = 64  # deeper nesting than any schema file holds: the bytes are not a message-index list
MAX_SCHEMA_ID = 2**31 - 1


class WireError(ValueError):
    """Bytes that start like Confluent's wire format but do not follow it; the text says how."""


def framed_id(data: bytes) -> int | None:
    """The schema id when `data` starts with Confluent's header, else None."""
    if len(data) < HEADER or data[0] != MAGIC:
        return None
    return int(struct.unpack(">I", data[1:HEADER])[0])


def payload(data: bytes) -> bytes:
    return data[HEADER:]


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if at >= len(data):
            raise WireError("the message-index list of Confluent's Protobuf framing is cut short")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at  # zigzag
        shift += 7
        if shift > 63:
            raise WireError("the message-index list of Confluent's Protobuf framing holds a number longer than 64 bits")


def read_indexes(body: bytes) -> tuple[tuple[int, ...], bytes]:
    """(message indexes, the Protobuf message) from what follows the schema id."""
    count, at = _read_varint(body, 0)
    if count == 0:
        return (0,), body[at:]
    if count < 0 or count > MAX_INDEXES:
        raise WireError(f"the message-index list of Confluent's Protobuf framing claims {count} entries")
    indexes = []
    for _ in range(count):
        index, at = _read_varint(body, at)
        if index < 0:
            raise WireError(f"the message-index list of Confluent's Protobuf framing holds a negative index ({index})")
        indexes.append(index)
    return tuple(indexes), body[at:]


def _write_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        if z < 0x80:
            out.append(z)
            return bytes(out)
        out.append((z & 0x7F) | 0x80)
        z >>= 7


def frame(schema_id: int, body: bytes, indexes: tuple[int, ...] | None = None) -> bytes:
    """`body` in Confluent's wire format; `indexes` for Protobuf (None for Avro and JSON Schema)."""
    head = bytes([MAGIC]) + struct.pack(">I", schema_id)
    if indexes is None:
        return head + body
    if indexes == (0,):
        return head + b"\x00" + body
    return head + _write_varint(len(indexes)) + b"".join(_write_varint(i) for i in indexes) + body
