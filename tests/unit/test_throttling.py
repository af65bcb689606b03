"""The console's record of Kafka throttling its own clients (librdkafka's throttle_cb events)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from console.gateway.throttling import ThrottleLog


def test_throttle_events_are_kept_per_client_and_broker_and_zero_is_not_a_throttle():
    log = ThrottleLog()
    producer, browser = log.callback("producer"), log.callback("message browser")
    started = time.time()
    producer(SimpleNamespace(broker_id=1, throttle_time=0.25))
    producer(SimpleNamespace(broker_id=1, throttle_time=0.5))
    producer(SimpleNamespace(broker_id=2, throttle_time=0.0))
    browser(SimpleNamespace(broker_id=3, throttle_time=0.1))
    assert [e.throttle_ms for e in log.since(started, "producer")] == [250, 500]
    assert log.summary() == [
        {"client": "message browser", "broker": 3, "times": 1, "max_ms": 100, "total_ms": 100, "last_at": log.since(started)[-1].at},
        {"client": "producer", "broker": 1, "times": 2, "max_ms": 500, "total_ms": 750, "last_at": log.since(started, "producer")[-1].at},
    ]
    assert log.since(time.time() + 1) == []
