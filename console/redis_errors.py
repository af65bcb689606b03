"""Redis failures as sentences: a refused password names REDIS_URL and how to give one, instead of
redis-py's "Authentication required." (Redis with `requirepass`: `REDIS_URL=redis://:PASSWORD@host:port/0`,
or `redis://USER:PASSWORD@...` for an ACL user; Channels, Celery, the snapshot store and the watcher
all read that one URL.)"""

from __future__ import annotations

from urllib.parse import urlsplit

import redis


class RedisCredentialsRefused(redis.AuthenticationError):
    """Redis refused the console's credentials; the message says what to change."""


def has_password(url: str) -> bool:
    try:
        return bool(urlsplit(url).password)
    except ValueError:
        return False


def credentials_sentence(url: str) -> str:
    if has_password(url):
        return "Redis refused the user name or password in REDIS_URL: check them against the server's requirepass or ACL."
    return ("Redis needs a password and REDIS_URL gives none: set REDIS_URL=redis://:PASSWORD@host:port/0 "
            "(or redis://USER:PASSWORD@host:port/0 for an ACL user).")


def describe(exc: BaseException, url: str) -> str:
    """A sentence for a failed Redis call; it never repeats the URL (it holds the password)."""
    if isinstance(exc, redis.AuthenticationError):
        return credentials_sentence(url)
    return f"Redis is unreachable ({exc})"
