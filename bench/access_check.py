"""The cost of the one check (issue 52): what a request or a websocket message pays to ask may().

`.venv/bin/python -m bench.access_check [--bindings 1000] [--requests 2000] [--topics 10000]`
creates the bindings in a throw-away SQLite database (spread over 200 Django groups, the user in 5 of
them), then per request loads the user anew (as Django does), asks `may()` for a topic and a group,
and reports the median and p99 in milliseconds; then the cut of a 10,000-topic list to the user's
names. Budget: <= 1 ms per check at 1,000 bindings. One JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from bench.in_process import django_with_test_databases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=10_000)
    args = parser.parse_args()
    with django_with_test_databases("access-bench-"):
        print(json.dumps(_measure(args.bindings, args.requests, args.topics)))


def _measure(n_bindings: int, requests: int, n_topics: int) -> dict[str, float | int]:
    from django.contrib.auth.models import Group, User

    from console.auth import access_for, bump_generation, may
    from console.models import RoleBinding

    groups = [Group.objects.create(name=f"team-{i}") for i in range(200)]
    user = User.objects.create_user("bench", password="x")
    user.groups.set(groups[:5])
    RoleBinding.objects.bulk_create([
        RoleBinding(subject_kind="group", subject=f"team-{i % 200}", role="operator", cluster="local",
                    topic_kind=("prefix", "regex", "literal")[i % 3],
                    topic_pattern=(f"team-{i}.", rf"team-{i}\.[a-z]+-v\d+", f"team-{i}.orders")[i % 3],
                    group_kind="prefix", group_pattern=f"team-{i}/")
        for i in range(n_bindings)
    ])
    bump_generation()  # (bulk_create sends no post_save)
    times = []
    for i in range(requests):
        fresh = User.objects.get(pk=user.pk)  # (a request loads its user anew)
        started = time.perf_counter()
        may(fresh, "topic.view", "local", topic=f"team-{i % 5}.orders")
        may(fresh, "group.reset_offsets", "local", group=f"team-{i % 7}/svc")
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    socket_ms = _socket_message(user, requests)
    names = [f"team-{i % 400}.t{i}" for i in range(n_topics)]
    predicate = access_for(User.objects.get(pk=user.pk)).names("topic.view", "local", "topics")
    assert predicate is not None
    started = time.perf_counter()
    shown = [n for n in names if predicate(n)]
    cut_ms = (time.perf_counter() - started) * 1000
    return {"bindings": n_bindings, "requests": requests, "check_p50_ms": round(statistics.median(times), 3),
            "check_p99_ms": round(times[int(len(times) * 0.99) - 1], 3), "topics": n_topics, "visible": len(shown),
            "list_cut_ms": round(cut_ms, 2), "socket_message_p50_ms": socket_ms}


def _socket_message(user: object, requests: int) -> float:
    """What a websocket message pays before it runs: its session read again, its user's row, and
    `may()` for its topic (console/socket_guard.py's check, as one socket)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    from console.auth import may
    from console.socket_guard import _verdicts

    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = str(user.pk)  # type: ignore[attr-defined]
    session[BACKEND_SESSION_KEY] = "console.user_backend.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()  # type: ignore[attr-defined]
    session.save()

    class Socket:
        _guard_has_session = True
        _guard_session_key = session.session_key
        _guard_user_id = user.pk  # type: ignore[attr-defined]

        def still_allowed(self, u: object) -> bool:
            return may(u, "messages.read", "local", topic="team-0.orders")  # type: ignore[arg-type]

    socket = Socket()
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        verdict = _verdicts([socket])  # type: ignore[list-item]
        times.append((time.perf_counter() - started) * 1000)
        assert not verdict, verdict
    return round(statistics.median(times), 3)


if __name__ == "__main__":
    main()
