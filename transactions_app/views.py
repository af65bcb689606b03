"""The transactions page: every transactional id, hanging ones first and highlighted, and the abort of
a hanging one (admin) after its id is typed again."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from console import error_responses, gateway, snapshots
from console.auth import allow, may
from console.errors import ConsoleError
from transactions_app import services

# Rows drawn at most (hanging ones first, so they are always among them): a cluster's 10,000
# transactional ids in one table take seconds to draw; the rest are counted and found with `q`.
PAGE_ROWS = 100


def _page(request: HttpRequest, cluster: str, extra: dict[str, Any], status: int = 200) -> HttpResponse:
    context: dict[str, Any] = {"view": "transactions", "cluster": cluster, "live": snapshots.live(cluster),
                               "can_abort": may(request.user, "transactions.abort", cluster), **extra}
    if "transactions" not in context and "list_error" not in context:
        try:
            context["transactions"] = services.list_transactions(cluster)
        except ConsoleError as exc:
            context["list_error"] = error_responses.message(exc)
    rows = context.get("transactions")
    if rows:
        q = request.GET.get("q", "").strip()
        matching = [t for t in rows if q in t["transactional_id"]] if q else rows
        context.update(q=q, total=len(rows), matching=len(matching), transactions=matching[:PAGE_ROWS],
                       not_shown=max(0, len(matching) - PAGE_ROWS))
    context["hanging"] = sum(1 for t in rows or [] if t["hanging"])
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
