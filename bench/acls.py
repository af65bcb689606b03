"""ACLs at scale: the list page, the list API and the effective-permission check with 100,000 ACLs.

`.venv/bin/python -m bench.acls [--acls 100000] [--requests 60]` starts the secured test broker
(tests/secured_broker.py, StandardAuthorizer) and its own Redis, creates the ACLs in batches of a
thousand (2,000 principals; literal and prefixed topics, groups, transactional ids), then through
Django's test client as an admin times: the cold read of every ACL, the list page and API (first page,
by principal, by resource MATCH), and one check through the API and as a call. Budget: list page and
API <= 100 ms median, one check <= 5 ms. One JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.in_process import django_with_test_databases


def make_acls(n: int, seed: int = 7) -> list[Any]:
    from console.gateway.types import Acl
    from security_app.acl_rules import OPERATIONS

    rng = random.Random(seed)
    found: set[Acl] = set()
    while len(found) < n:
        i = len(found)
        who = f"User:svc-{rng.randrange(2000)}"
        kind = rng.random()
        if kind < 0.6:
            acl = Acl("TOPIC", "LITERAL", f"team-{i % 500}.topic-{i}", who, "*", rng.choice(OPERATIONS["TOPIC"][1:]), "ALLOW")
        elif kind < 0.8:
            acl = Acl("TOPIC", "PREFIXED", f"team-{i % 500}.{rng.randrange(1000)}", who, "*", rng.choice(("READ", "WRITE")),
                      rng.choice(("ALLOW", "ALLOW", "DENY")))
        elif kind < 0.95:
            acl = Acl("GROUP", rng.choice(("LITERAL", "PREFIXED")), f"team-{i % 500}.group-{i}", who, "*", "READ", "ALLOW")
        else:
            acl = Acl("TRANSACTIONAL_ID", "LITERAL", f"tx-{i}", who, "*", "WRITE", "ALLOW")
        found.add(acl)
    return sorted(found)


def timed(call: Callable[[], Any], n: int) -> dict[str, float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {"median_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(len(times) * 0.95) - 1], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acls", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    os.environ.setdefault("TEST_SASL_BROKER_HEAP", "1g")  # a hundred thousand ACLs outgrow the tests' 256 MB
    with django_with_test_databases("acl-bench-"):
        from tests.secured_broker import running_secured_broker  # (they read TEST_VAR_DIR, set just now)
        from tests.support import running_redis

        with running_redis(), running_secured_broker():
            print(json.dumps(_measure(args.acls, args.requests)))


def _measure(n: int, requests: int) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.test import Client, override_settings

    from console import gateway
    from security_app import acls
    from tests.secured_broker import secured_cluster

    config = dataclasses.replace(secured_cluster("bench", protocol="SASL_PLAINTEXT"), super_users="User:alice")
    result: dict[str, Any] = {"acls": n}
    with override_settings(KAFKA_CLUSTERS=(config,), KAFKA_REQUEST_TIMEOUT=60):
        gateway._gateways.clear()
        wanted = make_acls(n)
        start = time.monotonic()
        gw = gateway.for_cluster("bench")
        for i in range(0, n, 1000):
            gw.create_acls(wanted[i : i + 1000])
            print(f"created {i + 1000} ACLs after {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        result["create_s"] = round(time.monotonic() - start, 1)
        while len(gw.acls()) < n:
            time.sleep(0.5)
        start = time.monotonic()
        held = acls._read("bench", acls._generation("bench"))
        result["cold_read_s"] = round(time.monotonic() - start, 2)
        assert len(held.index.acls) == n
        client = Client()
        client.force_login(User.objects.create_superuser("bench", "b@example.com", "bench-pw-123"))
        someone = wanted[n // 2]
        topic = f"{someone.resource_name}" if someone.resource_type == "TOPIC" else "team-7.topic-7"

        def get(path: str, **params: str) -> Callable[[], Any]:
            def call() -> Any:
                answer = client.get(path, params)
                assert answer.status_code == 200, answer.content[:300]
                return answer
            return call

        page, api = "/clusters/bench/security/acls/", "/api/v1/clusters/bench/acls/"
        get(page)()  # the first request reads the ACLs into this process
        result["page_first"] = timed(get(page), requests)
        result["api_first"] = timed(get(api), requests)
        result["api_by_principal"] = timed(get(api, principal=someone.principal), requests)
        result["page_by_principal"] = timed(get(page, principal=someone.principal), requests)
        result["api_match"] = timed(get(api, resource_type="TOPIC", resource_name=topic, pattern_type="MATCH"), requests)
        body = {"principal": someone.principal, "operation": "DESCRIBE", "resource_type": "TOPIC", "resource_name": topic,
                "host": "10.0.0.1"}

        def check_api() -> None:
            answer = client.post(api + "check/", body, content_type="application/json")
            assert answer.status_code == 200, answer.content[:300]

        result["check_api"] = timed(check_api, requests)
        result["check_call"] = timed(lambda: acls.check("bench", principal_name=someone.principal, operation="DESCRIBE",
                                                        resource_type="TOPIC", resource_name=topic, host="10.0.0.1"),
                                     requests * 10)
        result["load_average"] = round(os.getloadavg()[0], 1)
    return result


if __name__ == "__main__":
    main()
