"""The SCRAM user and quota API and pages in-process, on a stand-in gateway: sentences for bad input,
passwords never audited or answered, odd names shown as text, dry runs that change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from console import gateway
from console.gateway.quotas import QuotaEntry
from console.gateway.scram import ScramCredential, ScramUser
from console.models import AuditEntry
from console.snapshots.model import Snapshot

ODD = "O'Brien \"<b>x</b>\" 数据"
SECRET = "hunter2-very-secret"


class FakeKafka:
    def __init__(self) -> None:
        self.users: dict[str, dict[str, int]] = {"alice": {"SCRAM-SHA-256": 8192}, ODD: {"SCRAM-SHA-512": 4096}}
        self.quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {
            (("user", "bob"), ("client-id", None)): {"producer_byte_rate": 102400.0},
            (("client-id", "<script>"),): {"consumer_byte_rate": 2048.0},
        }
        self.calls: list[tuple[Any, ...]] = []

    def scram_users(self) -> list[ScramUser]:
        return [ScramUser(n, tuple(ScramCredential(m, i) for m, i in sorted(c.items()))) for n, c in sorted(self.users.items())]

    def upsert_scram_credential(self, user: str, mechanism: str, password: str, iterations: int) -> None:
        self.calls.append(("upsert", user, mechanism, iterations))
        self.users.setdefault(user, {})[mechanism] = iterations

    def delete_scram_credentials(self, user: str, mechanisms: list[str]) -> None:
        self.calls.append(("delete", user, tuple(mechanisms)))
        for m in mechanisms:
            self.users[user].pop(m)
        if not self.users[user]:
            del self.users[user]

    def client_quotas(self) -> list[QuotaEntry]:
        return [QuotaEntry(e, dict(v)) for e, v in self.quotas.items()]

    def alter_client_quotas(self, entity: Any, set_values: dict[str, float], remove: list[str], validate_only: bool = False) -> None:
        self.calls.append(("alter", entity, dict(set_values), tuple(remove), validate_only))
        if validate_only:
            return
        values = self.quotas.setdefault(entity, {})
        values.update(set_values)
        for k in remove:
            values.pop(k, None)
        if not values:
            del self.quotas[entity]


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch, snapshot: Snapshot) -> FakeKafka:
    fake = FakeKafka()
    monkeypatch.setattr(gateway, "for_cluster", lambda name: (gateway.cluster_config(name), fake)[1])
    return fake


def api(client: Client, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.generic(method, "/api/v1/clusters/local/" + path, json.dumps(body or {}), content_type="application/json")


def test_the_user_list_shows_mechanisms_and_iterations_and_no_secret(client_as: Any, kafka: FakeKafka) -> None:
    answer = api(client_as("viewer"), "GET", "users/").json()
    assert answer == {"users": [{"name": ODD, "mechanisms": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]},
                                {"name": "alice", "mechanisms": [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}]}]}


def test_creating_a_user_audits_name_and_mechanism_never_the_password(client_as: Any, kafka: FakeKafka, db: None) -> None:
    r = api(client_as("admin"), "POST", "users/", {"name": "carol", "mechanism": "SCRAM-SHA-512", "password": SECRET})
    assert r.status_code == 201, r.content
    assert r.json()["message"] == "Created user 'carol' with SCRAM-SHA-512 (4096 iterations)."
    assert SECRET not in r.content.decode()
    r = api(client_as("admin"), "POST", "users/", {"name": "carol", "mechanism": "SCRAM-SHA-512", "password": SECRET + "2",
                                                     "iterations": 8192})
    assert r.status_code == 200 and r.json()["message"] == "Changed the SCRAM-SHA-512 password of user 'carol'."
    entries = list(AuditEntry.objects.filter(action="scram_user_set"))
    assert [(e.target, e.details["mechanism"], e.outcome) for e in entries] == [("carol", "SCRAM-SHA-512", "ok")] * 2
    assert all(SECRET not in json.dumps(e.details) for e in entries)
    assert kafka.calls == [("upsert", "carol", "SCRAM-SHA-512", 4096), ("upsert", "carol", "SCRAM-SHA-512", 8192)]


def test_a_dry_run_checks_and_changes_nothing(client_as: Any, kafka: FakeKafka, db: None) -> None:
    r = api(client_as("admin"), "POST", "users/?dry_run=1", {"name": "dave", "mechanism": "SCRAM-SHA-256", "password": SECRET})
    assert r.status_code == 200 and r.json()["message"].startswith("Would create user 'dave'")
    r = api(client_as("admin"), "DELETE", "users/alice/?dry_run=1")
    assert r.json()["message"] == "Would delete user 'alice' (SCRAM-SHA-256)."
    assert kafka.calls == [] and not AuditEntry.objects.filter(action__startswith="scram").exists()


@pytest.mark.parametrize(("body", "sentence"), [
    ({"name": "x", "mechanism": "SCRAM-SHA-256", "password": "short"},
     "The password must be at least 8 characters long (the console's minimum: Kafka sets none, since it only ever sees "
     "a salted hash)."),
    ({"name": "x", "mechanism": "MD5", "password": SECRET}, "Unknown SCRAM mechanism 'MD5'; Kafka's are SCRAM-SHA-256 and SCRAM-SHA-512."),
    ({"name": "x", "mechanism": "SCRAM-SHA-256", "password": SECRET, "iterations": 100},
     "SCRAM iterations must be between 4096 and 16384 (Kafka's bounds), not 100."),
    ({"name": "x", "mechanism": "SCRAM-SHA-256", "password": 12345678}, "'password' must be a string."),
    ({"name": "x", "mechanism": "SCRAM-SHA-256"}, "'password': This field is required."),
])
def test_bad_user_input_is_a_400_sentence_that_never_repeats_the_password(client_as: Any, kafka: FakeKafka, body: dict[str, Any],
                                                                          sentence: str) -> None:
    r = api(client_as("admin"), "POST", "users/", body)
    assert r.status_code == 400 and r.json()["detail"] == sentence
    assert kafka.calls == []
    for entry in AuditEntry.objects.all():
        assert SECRET not in json.dumps(entry.details)


def test_deleting_one_mechanism_or_a_missing_user(client_as: Any, kafka: FakeKafka) -> None:
    kafka.users["alice"]["SCRAM-SHA-512"] = 4096
    r = api(client_as("admin"), "DELETE", "users/alice/?mechanism=SCRAM-SHA-512")
    assert r.json()["message"] == "Deleted the SCRAM-SHA-512 credential of user 'alice'."
    assert api(client_as("admin"), "DELETE", "users/nobody/").json()["detail"] == "Cluster 'local' has no SCRAM user 'nobody'."
    assert api(client_as("admin"), "DELETE", "users/alice/?mechanism=SHA1").status_code == 400


def test_the_quota_list_and_the_effective_quota(client_as: Any, kafka: FakeKafka) -> None:
    c = client_as("viewer")
    assert api(c, "GET", "quotas/").json()["quotas"] == [
        {"entity": {"user": "bob", "client-id": None}, "entity_text": "user 'bob' + default client-id",
         "values": {"producer_byte_rate": 102400}},
        {"entity": {"client-id": "<script>"}, "entity_text": "client-id '<script>'", "values": {"consumer_byte_rate": 2048}},
    ]
    answer = api(c, "GET", "quotas/effective/?user=bob&client_id=%3Cscript%3E").json()
    got = {q["key"]: (q["value"], q["rank"]) for q in answer["quotas"]}
    assert got["producer_byte_rate"] == (102400, 2) and got["consumer_byte_rate"] == (2048, 7)
    assert got["request_percentage"] == (None, None) and "connection_creation_rate" not in got
    assert api(c, "GET", "quotas/effective/").status_code == 400


@pytest.mark.parametrize(("body", "sentence"), [
    ({"entity": {"user": "bob"}, "set": {"producer_byte_rate": -1}},
     "Quota 'producer_byte_rate' must be more than 0, not -1; to lift a quota, remove it."),
    ({"entity": {"user": "bob"}, "set": {"produce_rate": 5}},
     "Unknown quota 'produce_rate'; the quotas are producer_byte_rate, consumer_byte_rate, request_percentage, "
     "controller_mutation_rate, connection_creation_rate."),
    ({"entity": {"user": "bob"}, "set": {"producer_byte_rate": "100"}}, "'set.producer_byte_rate' must be a number."),
    ({"entity": {"team": "x"}, "set": {"producer_byte_rate": 5}},
     "'entity' has an unknown entity type 'team'; the types are user, client-id and ip."),
    ({"set": {"producer_byte_rate": 5}}, "'entity': This field is required."),
])
def test_bad_quota_input_is_a_400_sentence(client_as: Any, kafka: FakeKafka, body: dict[str, Any], sentence: str) -> None:
    r = api(client_as("admin"), "POST", "quotas/", body)
    assert r.status_code == 400 and r.json()["detail"] == sentence
    assert kafka.calls == []


def test_setting_and_removing_quotas_validates_first_and_audits(client_as: Any, kafka: FakeKafka, db: None) -> None:
    c = client_as("admin")
    r = api(c, "POST", "quotas/", {"entity": {"user": None, "client_id": "app"}, "set": {"request_percentage": 12.5}})
    assert r.json()["message"] == "Applied request_percentage=12.5 for default user + client-id 'app'."
    assert kafka.calls == [("alter", (("user", None), ("client-id", "app")), {"request_percentage": 12.5}, (), True),
                           ("alter", (("user", None), ("client-id", "app")), {"request_percentage": 12.5}, (), False)]
    r = api(c, "DELETE", "quotas/", {"entity": {"user": "bob", "client-id": None}})
    assert r.json()["message"] == "Applied removed producer_byte_rate for user 'bob' + default client-id."
    assert (("user", "bob"), ("client-id", None)) not in kafka.quotas
    assert api(c, "DELETE", "quotas/", {"entity": {"user": "zed"}}).status_code == 404
    assert [e.outcome for e in AuditEntry.objects.filter(action="quotas_alter").order_by("id")] == ["ok", "ok", "refused"]


def test_the_pages_show_odd_names_as_text_and_forms_only_to_admins(client_as: Any, kafka: FakeKafka) -> None:
    page = client_as("viewer").get("/clusters/local/security/users/").content.decode()
    assert "O&#x27;Brien &quot;&lt;b&gt;x&lt;/b&gt;&quot; 数据" in page and "<b>x</b>" not in page
    assert 'id="user-form"' not in page
    page = client_as("admin").get("/clusters/local/security/quotas/?user=bob&client_id=x").content.decode()
    assert "&lt;script&gt;" in page and "<script>" not in page.replace('<script src=', '')
    assert 'id="quota-form"' in page and 'id="effective-table"' in page


def test_the_users_form_dry_runs_then_applies_and_never_echoes_the_password(client_as: Any, kafka: FakeKafka) -> None:
    c = client_as("admin")
    form = {"op": "set", "name": "erin", "mechanism": "SCRAM-SHA-256", "password": SECRET, "iterations": "4096"}
    page = c.post("/clusters/local/security/users/", {**form, "apply": "0"}).content.decode()
    assert "Would create user &#x27;erin&#x27;" in page and SECRET not in page and kafka.calls == []
    r = c.post("/clusters/local/security/users/", {**form, "apply": "1"})
    assert r.status_code == 302 and kafka.calls == [("upsert", "erin", "SCRAM-SHA-256", 4096)]
    r = c.post("/clusters/local/security/users/", {**form, "password": "short", "apply": "1"})
    assert r.status_code == 400 and "at least 8 characters" in r.content.decode()


def test_deleting_from_the_users_page_asks_again_before_it_deletes(client_as: Any, kafka: FakeKafka) -> None:
    c = client_as("admin")
    page = c.post("/clusters/local/security/users/", {"op": "delete", "name": "alice", "apply": "0"}).content.decode()
    assert "Would delete user &#x27;alice&#x27; (SCRAM-SHA-256)." in page and 'id="confirm-delete"' in page
    assert kafka.calls == []
    r = c.post("/clusters/local/security/users/", {"op": "delete", "name": "alice", "mechanism": "", "apply": "1"})
    assert r.status_code == 302 and kafka.calls == [("delete", "alice", ("SCRAM-SHA-256",))]


def test_the_quotas_form_sets_defaults_and_removes_with_a_second_step(client_as: Any, kafka: FakeKafka) -> None:
    c = client_as("admin")
    form = {"op": "set", "user": "ignored-when-default", "user_default": "1", "client_id": "app", "producer_byte_rate": "2048",
            "remove": ["request_percentage"]}
    page = c.post("/clusters/local/security/quotas/", {**form, "apply": "0"}).content.decode()
    assert "Kafka accepts producer_byte_rate=2048, removed request_percentage for default user + client-id &#x27;app&#x27;." in page
    assert c.post("/clusters/local/security/quotas/", {**form, "apply": "1"}).status_code == 302
    assert kafka.quotas[(("user", None), ("client-id", "app"))] == {"producer_byte_rate": 2048.0}
    bad = c.post("/clusters/local/security/quotas/", {**form, "producer_byte_rate": "-1", "apply": "1"})
    assert bad.status_code == 400 and "must be more than 0, not -1" in bad.content.decode()
    bad = c.post("/clusters/local/security/quotas/", {**form, "producer_byte_rate": "fast", "apply": "1"})
    assert bad.status_code == 400 and "Quota &#x27;producer_byte_rate&#x27; must be a number, not &#x27;fast&#x27;." in bad.content.decode()
    remove = {"op": "remove", "user": "bob", "client_id_default": "1"}
    page = c.post("/clusters/local/security/quotas/", {**remove, "apply": "0"}).content.decode()
    assert 'id="confirm-remove"' in page and (("user", "bob"), ("client-id", None)) in kafka.quotas
    confirm = page[page.index('id="confirm-remove"'):]
    assert '<input type="hidden" name="user" value="bob">' in confirm
    assert '<input type="hidden" name="client_id_default" value="1">' in confirm
    assert c.post("/clusters/local/security/quotas/", {**remove, "apply": "1"}).status_code == 302
    assert (("user", "bob"), ("client-id", None)) not in kafka.quotas
