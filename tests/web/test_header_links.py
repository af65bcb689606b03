"""The header's cluster tabs (reversed once per process and cluster, console/context.py) link to the
pages of the cluster shown, under the deployment's script prefix."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.urls import set_script_prefix


def test_the_header_tabs_link_to_the_shown_clusters_pages(client_as: Any, snapshot: object) -> None:
    html = client_as("viewer").get("/clusters/local/groups/").content.decode()

    for path in ("", "topics/", "groups/", "layout/", "at-risk/", "events/", "reassignments/", "analytics/"):
        assert f'<a href="/clusters/local/{path}" class="' in html, path


def test_the_header_tabs_carry_the_script_prefix(users: dict[str, User], snapshot: object, client: Any) -> None:
    client.force_login(users["viewer"])
    client.get("/clusters/local/topics/")  # (the links without a prefix reversed first)
    set_script_prefix("/console/")  # (as a WSGI server mounted under /console sets it per request)
    try:
        html = client.get("/clusters/local/topics/").content.decode()
    finally:
        set_script_prefix("/")

    assert '<a href="/console/clusters/local/groups/" class="' in html
