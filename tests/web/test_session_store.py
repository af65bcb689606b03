"""Sessions are read from the database on every request in one prepared statement
(console/session_store.py): what another web process does to a session (a logout, a change of its
data, its expiry) counts on this process's next request, though this process decoded it before."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from console import session_store


def _logged_in() -> Client:
    c = Client()
    assert c.post("/login/", {"username": "viewer", "password": "pw-viewer"}).status_code == 302
    assert c.get("/clusters/local/").status_code == 200  # (its session decoded and kept by this process)
    return c


def test_a_session_ended_by_another_process_is_refused_on_the_next_request(users: dict[str, User], snapshot: object) -> None:
    c = _logged_in()
    Session.objects.filter(session_key=c.cookies["sessionid"].value).delete()  # (a logout on another web process)

    response = c.get("/clusters/local/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert c.get("/api/v1/clusters/").status_code in (401, 403)


def test_an_expired_session_row_is_refused_though_its_text_was_decoded_before(users: dict[str, User], snapshot: object) -> None:
    c = _logged_in()
    Session.objects.filter(session_key=c.cookies["sessionid"].value).update(expire_date=timezone.now() - timedelta(seconds=1))

    assert c.get("/clusters/local/").status_code == 302


def test_session_data_changed_by_another_process_is_read_on_the_next_request(users: dict[str, User], snapshot: object) -> None:
    c = _logged_in()
    key = c.cookies["sessionid"].value
    store = session_store.SessionStore(key)
    store["note"] = "written elsewhere"
    store.save()

    assert session_store.SessionStore(key)["note"] == "written elsewhere"
    assert c.get("/clusters/local/").status_code == 200


def test_a_request_changing_its_session_leaves_the_kept_decoding_as_stored(users: dict[str, User]) -> None:
    c = _logged_in()
    key = c.cookies["sessionid"].value
    session_store.SessionStore(key).load().clear()  # (a request's copy, changed and never saved)

    assert "_auth_user_id" in session_store.SessionStore(key).load()


def test_a_missing_or_malformed_session_key_reads_as_no_session(db: None) -> None:
    assert session_store.SessionStore("no-such-session-key-0123456789").load() == {}
    assert session_store.SessionStore("x").load() == {}
    c = Client()
    c.cookies["sessionid"] = "'; DROP TABLE x; --"
    assert c.get("/clusters/local/").status_code == 302
