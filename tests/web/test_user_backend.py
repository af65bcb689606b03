"""The signed-in user is read from the database on every request in one prepared statement
(console/user_backend.py): a user deactivated, removed or given a new password by another web
process (or straight in the database) is refused on this process's next request."""

from __future__ import annotations

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.test import Client

from console.user_backend import ModelBackend


def _logged_in() -> Client:
    c = Client()
    assert c.post("/login/", {"username": "viewer", "password": "pw-viewer"}).status_code == 302
    assert c.get("/clusters/local/").status_code == 200
    assert c.session[BACKEND_SESSION_KEY] == "console.user_backend.ModelBackend"
    return c


def _refused(c: Client) -> bool:
    response = c.get("/clusters/local/")
    return response.status_code == 302 and response["Location"].startswith("/login/") and \
        c.get("/api/v1/clusters/").status_code in (401, 403)


def test_a_user_deactivated_elsewhere_is_refused_on_the_next_request(users: dict[str, User], snapshot: object) -> None:
    c = _logged_in()
    User.objects.filter(username="viewer").update(is_active=False)  # (no signal: as another process or a script)

    assert _refused(c)


def test_a_user_removed_elsewhere_is_refused_on_the_next_request(users: dict[str, User], snapshot: object) -> None:
    c = _logged_in()
    User.objects.filter(username="viewer").delete()

    assert _refused(c)


def test_a_password_changed_elsewhere_ends_the_session(users: dict[str, User], snapshot: object) -> None:
    c = _logged_in()
    User.objects.filter(username="viewer").update(password=make_password("another-password"))

    assert _refused(c)


def test_the_backend_reads_the_user_as_the_orm_does(users: dict[str, User]) -> None:
    viewer = users["viewer"]
    read = ModelBackend().get_user(str(viewer.pk))

    assert read is not None and (read.pk, read.username, read.password, read.date_joined, read.is_active) == (
        viewer.pk, viewer.username, viewer.password, viewer.date_joined, True)
    assert ModelBackend().get_user("not-a-number") is None and ModelBackend().get_user(10**12) is None

