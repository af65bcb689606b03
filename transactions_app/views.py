"""The transactions page: every transactional id, hanging ones first and highlighted, and the abort of
a hanging one (admin) after its id is typed again; the producers page of a topic."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console import error_responses, gateway, snapshots
from console.auth import allow, may
from console.errors import BadParameter, ConsoleError
from transactions_app import producers, services

# Rows drawn at most (hanging ones first, so they are always among them): a cluster's 10,000
# transactional ids in one table take seconds to draw; the rest are counted and found with `q`.
PAGE_ROWS = 100


def _page(request: HttpRequest, cluster: str, extra: dict[str, Any], status: int = 200) -> HttpResponse:
    context: dict[str, Any] = {"view": "transactions", "cluster": cluster, "live": snapshots.live(cluster),
                               "can_abort": may(request.user, "transactions.abort", cluster), **extra}
    if "transactions" not in context:
        try:
            found = services.transactions(cluster)
        except ConsoleError as exc:
            context["list_error"] = error_responses.message(exc)
        else:
            q = request.GET.get("q", "").strip()
            matching, drawn = found.page(q, PAGE_ROWS)  # (only the rows drawn are decoded)
            context.update(q=q, total=found.total, matching=matching, hanging=found.hanging, transactions=drawn,
                           not_shown=max(0, matching - PAGE_ROWS), as_of=datetime.fromtimestamp(found.as_of, tz=UTC),
                           age_seconds=max(0, round(time.time() - found.as_of)), from_watcher=found.from_watcher,
                           poll_interval=found.every)
    return render(request, "transactions_app/transactions.html", context, status=status)


@allow(GET="transactions.view", POST="transactions.abort")
def transactions_page(request: HttpRequest, cluster: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    if request.method != "POST":
        return _page(request, cluster, {})
    tid, confirm = request.POST.get("transactional_id", ""), request.POST.get("confirm", "")
    try:
        outcome = services.abort(request.user, cluster, tid, confirm)
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        # (shown without the list, so nothing is asked of Kafka for a form the console refused)
        return _page(request, cluster, {"error": error, "transactions": None}, status)
    messages.success(request, outcome["message"])
    return redirect(reverse("transactions", args=[cluster]))


# Producer rows drawn at most: a topic whose partitions each have hundreds of producers would draw
# thousands; the API gives them all, and `partition` narrows the page to one.
PRODUCER_ROWS = 200


@allow(GET="topic.view")
def topic_producers_page(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    gateway.cluster_config(cluster)
    found = producers.topic_producers(cluster, topic)
    wanted = request.GET.get("partition", "").strip()
    shown = found["partitions"]
    if wanted:
        if not wanted.isdigit() or int(wanted) not in {p["partition"] for p in shown}:
            raise BadParameter(f"Topic '{topic}' has no partition '{wanted[:40]}'; its partitions are 0 to {len(shown) - 1}.")
        shown = [p for p in shown if p["partition"] == int(wanted)]
    total = sum(len(p["producers"]) for p in shown)
    drawn = islice(((p["partition"], r) for p in shown for r in p["producers"]), PRODUCER_ROWS)
    rows = [{"partition": n, **r, "last_at": datetime.fromtimestamp(r["last_timestamp"] / 1000, tz=UTC)
             if r["last_timestamp"] is not None else None} for n, r in drawn]
    return render(request, "transactions_app/producers.html", {
        "view": "status", "cluster": cluster, "live": snapshots.live(cluster), "topic": topic, "found": found,
        "partition": wanted, "counts": [(p["partition"], len(p["producers"])) for p in found["partitions"]],
        "rows": rows, "not_shown": total - len(rows), "total_rows": total})
