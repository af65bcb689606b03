"""404 and 500 answers: JSON under /api/, a page elsewhere; never a stack trace."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": f"Nothing at {request.path}."}, status=404)
    return render(request, "error.html", {"message": f"There is no page at {request.path}."}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    message = "The console failed to answer this request; the error is in its log."
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=500)
    return HttpResponse(f"<h1>Server error</h1><p>{message}</p>", status=500)
