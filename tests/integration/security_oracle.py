"""Kafka's own tools as the oracle of the SCRAM user and quota tests, on the secured test broker, and
the console pointed at that broker in-process (its API through Django's test client)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from django.test import Client

from console import gateway
from tests.secured_broker import DIR, SASL_PORT, SCRAM, USER_PASSWORD, client_properties, secured_cluster, tool
from tests.support import ROOT

_QUOTA = re.compile(r"^Quota configs for (?P<entity>.+?) are (?P<values>.*)$")
_SCRAM = re.compile(r"^SCRAM credential configs for user-principal '(?P<name>.*)' are (?P<values>.*)$")
_PART = re.compile(r"(?:the default (?P<default>user-principal|client-id|ip))|(?:(?P<kind>user-principal|client-id|ip) '(?P<name>.*?)')(?=,|$)")
_KINDS = {"user-principal": "user", "client-id": "client-id", "ip": "ip"}


def admin_props() -> list[str]:
    return ["--command-config", str(client_properties(USER_PASSWORD))]


def kafka_configs(*args: str) -> list[str]:
    done = tool("kafka-configs", *admin_props(), *args)
    assert done.returncode == 0, done.stderr or done.stdout
    return [line for line in done.stdout.splitlines() if line.strip()]


def scram_users() -> dict[str, dict[str, int]]:
    """`kafka-configs --describe --entity-type users`: user -> mechanism -> iterations."""
    found: dict[str, dict[str, int]] = {}
    for line in kafka_configs("--describe", "--entity-type", "users"):
        m = _SCRAM.match(line)
        if m:
            found[m["name"]] = {k: int(v.removeprefix("iterations=")) for k, v in
                                (p.split("=", 1) for p in m["values"].split(", "))}
    return found


def _entity(text: str) -> tuple[tuple[str, str | None], ...]:
    pairs = [(_KINDS[m["default"]], None) if m["default"] else (_KINDS[m["kind"]], m["name"]) for m in _PART.finditer(text)]
    return tuple(sorted(pairs, key=lambda p: ("user", "client-id", "ip").index(p[0])))


def quotas() -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """Every quota as `kafka-configs --describe` lists it for users, users and clients, clients, ips."""
    found = {}
    for types in (["users"], ["users", "clients"], ["clients"], ["ips"]):
        args = [a for t in types for a in ("--entity-type", t)]
        for line in kafka_configs("--describe", *args):
            m = _QUOTA.match(line)
            if m:
                found[_entity(m["entity"])] = {k: float(v) for k, v in (p.split("=", 1) for p in m["values"].split(", "))}
    return found


def as_entity(entity: dict[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(entity.items())


def user_properties(name: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Path:
    path = DIR / f"user-{abs(hash((name, password, mechanism)))}.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n"
                    f"sasl.jaas.config={SCRAM} required username={json.dumps(name, ensure_ascii=False)} password={json.dumps(password, ensure_ascii=False)};\n")
    return path


def allow_writes(principal: str, topic: str) -> None:
    done = tool("kafka-acls", *admin_props(), "--add", "--allow-principal", f"User:{principal}", "--operation", "Write",
                "--operation", "Describe", "--topic", topic)
    assert done.returncode == 0, done.stderr or done.stdout


def create_topic(topic: str) -> None:
    done = tool("kafka-topics", *admin_props(), "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    assert done.returncode == 0, done.stderr or done.stdout


def end_offset(topic: str) -> int:
    done = tool("kafka-get-offsets", *admin_props(), "--topic", topic)
    assert done.returncode == 0, done.stderr or done.stdout
    return sum(int(line.rsplit(":", 1)[1]) for line in done.stdout.split())


def console_produce(topic: str, properties: Path, value: str) -> tuple[bool, str]:
    """One record through kafka-console-producer with these client settings: (written, what it printed)."""
    import subprocess

    before = end_offset(topic)
    done = subprocess.run([str(ROOT / "kafka" / "bin" / "kafka-console-producer"), "--bootstrap-server", f"127.0.0.1:{SASL_PORT}",
                           "--topic", topic, "--producer.config", str(properties)],
                          input=value + "\n", capture_output=True, text=True, timeout=90)
    return end_offset(topic) == before + 1, done.stdout + done.stderr


def admin_client(db: Any = None) -> Client:
    user = User.objects.create_user("sec-admin", password="pw-sec-admin")
    user.groups.set([Group.objects.get(name="admin")])
    user.is_superuser = user.is_staff = True
    user.save()
    client = Client()
    client.force_login(user)
    return client


@contextmanager
def console_on_the_secured_broker(settings: Any, name: str) -> Iterator[str]:
    """The console's settings name the secured broker (SASL_SSL, SCRAM-SHA-256, as alice) as cluster `name`."""
    settings.KAFKA_CLUSTERS = (*settings.KAFKA_CLUSTERS, secured_cluster(name))
    try:
        yield name
    finally:
        cached = gateway._gateways.pop(name, None)
        if cached is not None:
            cached.close()


def api(client: Client, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.generic(method, path, json.dumps(body or {}), content_type="application/json")
