"""Benchmark of data masking: `.venv/bin/python -m bench.masking`.

Stores 100 masking policies (literal, prefix and regex topic patterns over several clusters, with
roles and groups they apply to or exempt) in a throwaway in-memory database, then measures:
  1. the per-request check: `masker_for(user, cluster, topic)` with the policies compiled (the
     user's groups and the generation read from the database, plus the loop over 100 policies),
     the same with the groups kept (a websocket's next scan), and the loop alone;
  2. the per-record cost of masking two JSON fields and a header of a ~1 KB JSON value, and of a
     record no policy field is in (a parse, nothing rewritten).
Prints the figures (median of repeated runs); the budget for (1) is 1 ms.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ["DATABASE_URL"] = "sqlite:///:memory:"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402 - the settings above must be in place first

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402

from console.gateway.messages.records import Record  # noqa: E402
from topics_app.masking import masker_of  # noqa: E402
from topics_app.masking_policies import compiled, masker_for  # noqa: E402
from topics_app.models import MaskingPolicy  # noqa: E402

POLICIES = 100


def per_call(fn: Callable[[], Any], calls: int, rounds: int = 7) -> float:
    """Median seconds per call over `rounds` runs of `calls` calls."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


def store_policies() -> None:
    kinds = [("literal", "orders-{i}"), ("prefix", "team{i}."), ("regex", r"pay\.(cards|iban)-{i}(\..*)?")]
    for i in range(POLICIES):
        kind, pattern = kinds[i % 3]
        MaskingPolicy.objects.create(
            name=f"policy {i}", cluster="*" if i % 4 else f"cluster-{i}", topic_kind=kind, topic_pattern=pattern.format(i=i),
            applies_to=[] if i % 2 else ["viewer", f"team{i}"], exempt=["admin", f"auditors{i}"],
            targets=[{"kind": "json_path", "path": "$.customer.email"}, {"kind": "json_path", "path": "$.cards[*].number"},
                     {"kind": "header", "name": "authorization"}])


def main() -> None:
    call_command("migrate", verbosity=0)
    store_policies()
    user = User.objects.create_user("bench-viewer")
    user.groups.set([Group.objects.get_or_create(name=n)[0] for n in ("viewer", "team3", "support")])
    topic = "pay.cards-2"  # matched by one regex policy; the other 99 are looked at and passed over
    assert masker_for(user, "local", topic) is not None
    policies = compiled()
    names = frozenset({"viewer", "team3", "support"})

    loop = per_call(lambda: masker_of(policies, names, "local", topic), 2000)
    request = per_call(lambda: masker_for(user, "local", topic), 2000)

    def fresh_request() -> None:
        user.__dict__.pop("_masking_names", None)  # as a request's newly loaded user: its groups are read
        masker_for(user, "local", topic)

    fresh = per_call(fresh_request, 2000)

    masker = masker_of(policies, names, "local", topic)
    assert masker is not None
    doc = {"customer": {"email": "a@example.com", "name": "A"}, "cards": [{"number": "4111"}, {"number": "5500"}],
           "items": [{"sku": f"SKU-{i}", "qty": i, "note": "x" * 40} for i in range(12)]}
    value = json.dumps(doc).encode()
    plain = json.dumps({k: v for k, v in doc.items() if k == "items"}).encode()
    hit = Record(topic, 0, 1, 0, "CreateTime", b"k", value, (("Authorization", b"Bearer t"),), 1, len(value))
    miss = Record(topic, 0, 1, 0, "CreateTime", b"k", plain, (), 1, len(plain))
    masked = per_call(lambda: masker.apply(hit), 5000)
    untouched = per_call(lambda: masker.apply(miss), 5000)

    print(f"masking bench: {POLICIES} policies, topic {topic!r}")
    print(f"  per request, masker_for, user loaded anew (groups, generation, {POLICIES} policies): {fresh * 1e3:.3f} ms "
          "(budget 1 ms)")
    print(f"  per scan on an open socket, groups kept (generation, {POLICIES} policies): {request * 1e3:.3f} ms")
    print(f"  per request, the loop over {POLICIES} compiled policies alone:     {loop * 1e3:.3f} ms")
    print(f"  per record, {len(value)} B JSON, 2 fields and a header masked:    {masked * 1e6:.1f} us")
    print(f"  per record, {len(plain)} B JSON without the fields:              {untouched * 1e6:.1f} us")


if __name__ == "__main__":
    main()
