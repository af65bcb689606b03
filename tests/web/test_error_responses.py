"""console/error_responses.py: every kind of error answers with its sentence and status, as a page,
as the API's JSON or as a websocket message, and anything else with a sentence, never a trace."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import RequestFactory
from rest_framework.exceptions import ValidationError

from console import error_responses
from console.errors import BadParameter, Conflict, LimitReached, NoSnapshot
from console.gateway.errors import ClusterUnavailable, NotFound

pytestmark = pytest.mark.django_db


def request(path: str):
    made = RequestFactory().get(path)
    made.user = AnonymousUser()
    return made


@pytest.mark.parametrize("error, status", [(BadParameter("Bad 'page'."), 400), (NotFound("No topic 'x'."), 404),
                                           (Conflict("A job runs."), 409), (LimitReached("Three runs queued."), 429),
                                           (ClusterUnavailable("Cluster 'a' is unreachable."), 503), (NoSnapshot("a"), 503)])
def test_a_console_error_on_a_page_is_the_error_page_with_its_sentence_and_status(error, status) -> None:
    middleware = error_responses.ConsoleErrorMiddleware(lambda r: None)  # type: ignore[arg-type, return-value]
    response = middleware.process_exception(request("/clusters/a/topics/"), error)
    assert response is not None and response.status_code == status
    assert error.message.replace("'", "&#x27;") in response.content.decode()


def test_a_console_error_under_the_api_is_json_with_its_sentence() -> None:
    middleware = error_responses.ConsoleErrorMiddleware(lambda r: None)  # type: ignore[arg-type, return-value]
    response = middleware.process_exception(request("/api/v1/clusters/a/"), Conflict("A job runs."))
    assert response is not None and response.status_code == 409
    assert json.loads(response.content) == {"detail": "A job runs."}


def test_the_page_handler_leaves_other_errors_to_django() -> None:
    middleware = error_responses.ConsoleErrorMiddleware(lambda r: None)  # type: ignore[arg-type, return-value]
    assert middleware.process_exception(request("/"), RuntimeError("boom")) is None


def test_the_api_handler_answers_a_console_error_with_its_sentence_and_drf_errors_as_drf_does() -> None:
    ours = error_responses.api_exception_handler(NotFound("No group 'g'."), {})
    assert ours is not None and ours.status_code == 404 and ours.data == {"detail": "No group 'g'."}
    theirs = error_responses.api_exception_handler(ValidationError({"name": ["is required."]}), {})
    assert theirs is not None and theirs.status_code == 400 and theirs.data == {"name": ["is required."]}


def test_a_server_error_says_so_in_a_sentence_and_never_shows_a_trace() -> None:
    api = error_responses.server_error(request("/api/v1/clusters/"))
    assert api.status_code == 500 and json.loads(api.content) == {"detail": error_responses.FAILED}
    page = error_responses.server_error(request("/clusters/"))
    assert page.status_code == 500 and error_responses.FAILED in page.content.decode()
    assert "Traceback" not in page.content.decode()


def test_anything_but_a_console_error_is_a_500_with_the_log_sentence() -> None:
    assert error_responses.status(KeyError("x")) == 500
    assert error_responses.message(KeyError("x")) == error_responses.FAILED
    assert error_responses.form_error(Conflict("A job runs.")) == ("A job runs.", 409)


def test_a_socket_error_carries_the_pages_message_type_and_the_request_ids() -> None:
    assert error_responses.socket_error(BadParameter("Bad 'limit'."), "error", id=7) == {
        "type": "error", "id": 7, "message": "Bad 'limit'."}
    assert error_responses.socket_error(NoSnapshot("a"), "notice")["type"] == "notice"


def test_a_database_down_or_out_of_pooled_connections_answers_503_with_a_sentence_on_pages_and_the_api(client_as, monkeypatch):
    from django.contrib.sessions.backends.db import SessionStore
    from django.db import OperationalError

    client = client_as("viewer")
    client.raise_request_exception = False

    def refused(self):
        raise OperationalError("couldn't get a connection after 10.00 sec")

    monkeypatch.setattr(SessionStore, "load", refused)
    api = client.get("/api/v1/clusters/")
    assert api.status_code == 503 and api.json() == {"detail": error_responses.DATABASE_UNAVAILABLE}
    page = client.get("/clusters/")
    assert page.status_code == 503 and error_responses.DATABASE_UNAVAILABLE in page.content.decode()
    assert "couldn't get a connection" not in page.content.decode()
