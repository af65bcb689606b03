"""Per-user limits on open websockets, running message scans and live tails, counted in Redis so
that every web process of a deployment shares them.

Each (kind, user) is a sorted set of the slots held, scored by their last heartbeat (Redis's own
clock, so processes on hosts whose clocks differ agree): the sockets of a process refresh theirs at
every recheck (console/socket_guard.py), so the slots of a process that died age out after
SLOT_EXPIRY seconds instead of holding the user's allowance for ever.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import redis
from django.conf import settings

from console import snapshots

log = logging.getLogger(__name__)

# Seconds a slot is kept without a heartbeat: many rechecks (CONSOLE_WS_RECHECK_SECONDS), so a busy
# process that misses one or two never loses its sockets' slots.
SLOT_EXPIRY = 30.0


@dataclass(frozen=True)
class Kind:
    setting: str
    sentence: str  # {limit} and {setting} are filled in

    def limit(self) -> int:
        return int(getattr(settings, self.setting))

    def refusal(self) -> str:
        return self.sentence.format(limit=self.limit(), setting=self.setting)


KINDS = {
    "sockets": Kind("CONSOLE_WS_MAX_SOCKETS_PER_USER",
                    "You have {limit} live pages open, the most one user may ({setting}): close some of them, "
                    "then reload this one to get its live updates."),
    "scans": Kind("CONSOLE_WS_MAX_SCANS_PER_USER",
                  "You already run {limit} message scans, the most one user may ({setting}): stop one or wait "
                  "for one to end, then scan again."),
    "tails": Kind("CONSOLE_WS_MAX_TAILS_PER_USER",
                  "You already follow {limit} live tails, the most one user may ({setting}): stop one, then "
                  "start this one again."),
}

# Drops the slots whose heartbeat is older than the expiry, then takes the member's slot if it holds
# one already or the set has room; 1 when taken, 0 when full. One script, so two processes cannot
# both take the last slot.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local expiry = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - expiry)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(expiry) + 1)
return 1
"""

# Refreshes the heartbeat of slots still held (XX: one released meanwhile is not taken again).
_BEAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
for i = 1, #ARGV - 1 do
  redis.call('ZADD', KEYS[1], 'XX', now, ARGV[i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[#ARGV])) + 1)
return 1
"""


def key(kind: str, user_id: object) -> str:
    return f"console:ws:{kind}:{user_id}"


def take(kind: str, user_id: object, member: str) -> str | None:
    """Take a slot of this kind for the user (blocking: call it from a thread). None when taken, else
    the sentence that says why not. When Redis cannot be reached the slot is given: the limit guards
    against one user's excess, and the sockets themselves need Redis anyway."""
    return take_many([(kind, user_id, member)])[0]


def take_many(asks: list[tuple[str, object, str]]) -> list[str | None]:
    """`take` for each (kind, user, member), in order, in one round trip."""
    try:
        pipe = snapshots.redis_client().pipeline(transaction=False)
        for kind, user_id, member in asks:
            pipe.eval(_TAKE, 1, key(kind, user_id), member, SLOT_EXPIRY, KINDS[kind].limit())
        taken = pipe.execute()
    except redis.RedisError:
        log.warning("could not count the slots of %d websockets in Redis; not limited this time", len(asks), exc_info=True)
        return [None] * len(asks)
    return [None if t else KINDS[kind].refusal() for (kind, _, _), t in zip(asks, taken, strict=True)]


def release(kind: str, user_id: object, member: str) -> None:
    try:
        snapshots.redis_client().zrem(key(kind, user_id), member)
    except redis.RedisError:
        log.warning("could not release a %s slot of user %s in Redis; it ages out", kind, user_id, exc_info=True)


def beat(held: Iterable[tuple[str, object, str]]) -> None:
    """Refresh the heartbeat of the (kind, user, member) slots a process holds, in one round trip."""
    by_key: dict[str, list[str]] = {}
    for kind, user_id, member in held:
        by_key.setdefault(key(kind, user_id), []).append(member)
    if not by_key:
        return
    try:
        pipe = snapshots.redis_client().pipeline(transaction=False)
        for k, members in by_key.items():
            pipe.eval(_BEAT, 1, k, *members, SLOT_EXPIRY)
        pipe.execute()
    except redis.RedisError:
        log.warning("could not refresh the heartbeat of %d sockets' slots in Redis", len(by_key), exc_info=True)
