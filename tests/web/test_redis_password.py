"""A Redis with a password (`redis-server --requirepass`): the snapshot store, the Channels layer
and Celery's broker connect with the password in REDIS_URL, and say clearly what is wrong without it."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.test import Client
from kombu import Connection

from console import realtime
from console.redis_errors import RedisCredentialsRefused
from console.snapshots import changes, loader, store
from tests.support import TEST_VAR, off_the_test_thread, wait_for
from tests.web.conftest import sample_snapshot

PASSWORD = "s3cret-for-tests"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def locked_redis() -> Iterator[int]:
    """Its own redis-server on a free port, with a password."""
    port = _free_port()
    TEST_VAR.mkdir(parents=True, exist_ok=True)
    with open(TEST_VAR / "redis-password.log", "wb") as log:
        proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--requirepass", PASSWORD], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: redis.Redis(port=port, password=PASSWORD).ping(), 15, what="the Redis with a password")
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def use_redis(settings: object) -> Iterator[object]:
    """Points the console at a Redis URL for one test: the store's clients and the Channels layer anew."""
    def point(url: str) -> None:
        settings.REDIS_URL = url  # type: ignore[attr-defined]
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",  # type: ignore[attr-defined]
                                               "CONFIG": {"hosts": [url], "capacity": 200, "expiry": 30}}}
        store._client = changes._blocking = None

    yield point
    store._client = changes._blocking = None


def test_the_store_saves_and_loads_with_the_password_in_the_url(locked_redis: int, use_redis) -> None:  # noqa: ANN001
    use_redis(f"redis://:{PASSWORD}@127.0.0.1:{locked_redis}/0")
    snap = sample_snapshot(version=7)
    store.save(snap, snap.content_bytes())
    loaded = loader.load("local")
    assert loaded is not None and loaded.version == 7


def test_the_store_without_the_password_says_to_put_it_in_redis_url(locked_redis: int, use_redis) -> None:  # noqa: ANN001
    use_redis(f"redis://127.0.0.1:{locked_redis}/0")
    with pytest.raises(store.StoreUnavailable, match=r"Redis needs a password and REDIS_URL gives none: set REDIS_URL=redis://:PASSWORD@"):
        loader.load("local")


def test_a_wrong_password_is_named_as_such_and_never_shown(locked_redis: int, use_redis) -> None:  # noqa: ANN001
    use_redis(f"redis://:not-it@127.0.0.1:{locked_redis}/0")
    with pytest.raises(store.StoreUnavailable, match="refused the user name or password in REDIS_URL") as caught:
        loader.load("local")
    assert "not-it" not in str(caught.value)


def test_the_channel_layer_delivers_with_the_password_in_the_url(locked_redis: int, use_redis) -> None:  # noqa: ANN001
    use_redis(f"redis://:{PASSWORD}@127.0.0.1:{locked_redis}/0")
    layer = get_channel_layer()

    def deliver() -> dict:
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)("cluster.pw", channel)
        realtime.group_send("cluster.pw", {"type": "cluster.update", "version": 3})
        return async_to_sync(layer.receive)(channel)

    assert off_the_test_thread(deliver)["version"] == 3


def test_the_channel_layer_without_the_password_says_to_put_it_in_redis_url(locked_redis: int, use_redis) -> None:  # noqa: ANN001
    use_redis(f"redis://127.0.0.1:{locked_redis}/0")
    with pytest.raises(RedisCredentialsRefused, match="Redis needs a password and REDIS_URL gives none"):
        realtime.group_send("cluster.pw", {"type": "cluster.update", "version": 4})


def test_celery_s_broker_connects_with_the_password_in_the_url(locked_redis: int) -> None:
    with Connection(f"redis://:{PASSWORD}@127.0.0.1:{locked_redis}/0") as conn:
        conn.ensure_connection(max_retries=1)
    with Connection(f"redis://127.0.0.1:{locked_redis}/0") as conn, pytest.raises(Exception, match="(?i)auth"):
        conn.ensure_connection(max_retries=1)


def test_healthz_says_redis_wants_a_password(locked_redis: int, use_redis, db: None) -> None:  # noqa: ANN001
    use_redis(f"redis://127.0.0.1:{locked_redis}/0")
    body = Client().get("/healthz").json()
    assert body["redis"] == {"ok": False, "error": body["redis"]["error"]}
    assert body["redis"]["error"].startswith("Redis needs a password and REDIS_URL gives none")
