"""The ACL pages and the ACL sections of topic and group pages, on ACLs held as Kafka returned them
(no Kafka here: the reader's cache is filled by hand). The integration tests check the same against
a broker."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from console.gateway.types import Acl
from security_app import acls as acl_service
from security_app.acl_rules import AclIndex
from tests.web.conftest import make_user

ODD = "User:o'<b>ü\"/%"
ACLS = [
    Acl("TOPIC", "PREFIXED", "ord", "User:bob", "*", "READ", "ALLOW"),
    Acl("TOPIC", "LITERAL", "*", ODD, "10.0.0.7", "WRITE", "DENY"),
    Acl("TOPIC", "LITERAL", "payments", "User:bob", "*", "ALL", "ALLOW"),
    Acl("GROUP", "PREFIXED", "team/", "User:bob", "*", "READ", "ALLOW"),
]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    h = acl_service.Held(AclIndex(ACLS), frozenset({"User:admin"}), False, "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                         True, time.monotonic(), None)
    monkeypatch.setattr(acl_service, "held", lambda cluster: h)
    yield


def viewer(db: None) -> Client:
    client = Client()
    client.force_login(make_user("viewer"))
    return client


def test_the_topic_page_shows_the_acls_that_speak_to_it(with_group, held, db) -> None:
    page = viewer(db).get("/clusters/local/topics/orders/")
    assert page.status_code == 200 and b'id="resource-acls"' in page.content
    section = page.content.split(b'id="resource-acls"')[1].split(b"</section>")[0]
    assert b"ord" in section and b"READ" in section and b"WRITE" in section  # the prefix and the literal *
    assert b"payments" not in section
    assert b"o&#x27;&lt;b&gt;" in section and b"o'<b>" not in section


def test_the_group_page_shows_the_acls_that_speak_to_it(with_group, held, db) -> None:
    page = viewer(db).get(reverse("group", args=["local", "team/service"]))
    assert page.status_code == 200 and b'id="resource-acls"' in page.content
    section = page.content.split(b'id="resource-acls"')[1].split(b"</section>")[0]
    assert b"team/" in section and b"GROUP" in section


def test_a_cluster_without_an_authorizer_shows_no_section_and_the_acl_page_says_why(with_group, monkeypatch, db) -> None:
    h = acl_service.Held(AclIndex([]), frozenset(), False, "", False, time.monotonic(), None)
    monkeypatch.setattr(acl_service, "held", lambda cluster: h)
    client = viewer(db)
    assert b'id="resource-acls"' not in client.get("/clusters/local/topics/orders/").content
    page = client.get("/clusters/local/security/acls/")
    assert page.status_code == 409 and b"run no authorizer" in page.content
    api = client.get("/api/v1/clusters/local/acls/")
    assert api.status_code == 409 and "run no authorizer" in api.json()["detail"]


def test_the_acl_list_filters_and_the_principal_page(snapshot, held, db) -> None:
    client = viewer(db)
    page = client.get("/clusters/local/security/acls/", {"principal": "bob", "resource_type": "TOPIC"})
    assert page.status_code == 200
    table = page.content.split(b'id="acl-table"')[1]
    assert table.count(b"<tr>") == 1 + 2  # header, the prefix ord and payments
    assert b"Grant" not in page.content  # a viewer sees no create form
    odd = client.get("/clusters/local/security/acls/", {"principal": ODD})
    assert odd.status_code == 200 and odd.content.split(b'id="acl-table"')[1].count(b"<tr>") == 2
    principal = client.get("/clusters/local/security/principals/User:bob/")
    assert principal.status_code == 200 and b"payments" in principal.content and b"team/" in principal.content
    bad = client.get("/clusters/local/security/acls/", {"operation": "FLY"})
    assert bad.status_code == 400 and b"&#x27;operation&#x27; must be one of" in bad.content


def test_the_check_page_names_the_deciding_acl(snapshot, held, db) -> None:
    client = viewer(db)
    page = client.get("/clusters/local/security/check/", {"principal": "User:bob", "operation": "DESCRIBE",
                                                          "resource_type": "TOPIC", "resource_name": "orders", "host": "10.0.0.1"})
    assert page.status_code == 200 and b"ALLOWED" in page.content and b"ALLOW User:bob READ on TOPIC prefix" in page.content
    api = client.post("/api/v1/clusters/local/acls/check/", {"principal": ODD, "operation": "WRITE", "resource_type": "TOPIC",
                                                             "resource_name": "x", "host": "10.0.0.7"}, content_type="application/json")
    assert api.status_code == 200 and api.json()["allowed"] is False and api.json()["decided_by"][0]["principal"] == ODD
    bad = client.post("/api/v1/clusters/local/acls/check/", {"principal": "bob", "operation": "READ", "resource_type": "GROUP",
                                                             "resource_name": "g", "host": "*"}, content_type="application/json")
    assert bad.status_code == 400 and "not *" in bad.json()["detail"]


def test_an_admin_creates_with_a_dry_run_first(snapshot, held, db, monkeypatch) -> None:
    created: list[Acl] = []

    deleted: list[Acl] = []

    class Gateway:
        def create_acls(self, acls):
            created.extend(acls)

        def delete_acls(self, acls):
            deleted.extend(acls)
            return list(acls)

    monkeypatch.setattr(acl_service.gateway, "for_cluster", lambda name: Gateway())
    client = Client()
    client.force_login(make_user("admin"))
    form = {"preset": "consumer", "principal": "carol", "resource_name": "orders", "pattern_type": "LITERAL", "group": "billing",
            "permission": "ALLOW", "host": "*", "apply": "0"}
    preview = client.post("/clusters/local/security/acls/", form)
    assert preview.status_code == 200 and b"Dry run:" in preview.content and b"3 ACLs would be created" in preview.content
    assert created == []
    done = client.post("/clusters/local/security/acls/", {**form, "apply": "1"})
    assert done.status_code == 302 and len(created) == 3
    # Each row's delete button names its ACL; the dry run shows it, the second press deletes it.
    listed = client.get("/clusters/local/security/acls/", {"principal": ODD})
    button = re.search(rb'name="delete_acl" value="([^"]+)"', listed.content)
    assert button is not None
    value = html.unescape(button.group(1).decode())
    preview = client.post("/clusters/local/security/acls/", {"delete_acl": value})
    assert preview.status_code == 200 and b"this ACL would be deleted" in preview.content and deleted == []
    gone = client.post("/clusters/local/security/acls/", {"delete_acl": value, "apply": "1"})
    assert gone.status_code == 302 and deleted == [ACLS[1]]
    bad = client.post("/clusters/local/security/acls/", {"delete_acl": "{not json"})
    assert bad.status_code == 400 and b"must name an ACL" in bad.content
