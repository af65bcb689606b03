"""Destructive changes do only what they name, on the real cluster: a purge that names neither offsets
nor "all" is refused and the topic keeps its records; a config edit that names one key leaves the
topic's other overrides in place. Kafka's own tools are the oracle."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.conftest import Stack
from tests.integration.test_topics import API, make_topic, post, produce
from tests.support import PASSWORD

pytestmark = pytest.mark.cluster


def page_session(stack: Stack, user: str) -> requests.Session:
    """A browser-like session logged in on the pages (they take no API token)."""
    session = requests.Session()
    session.get(stack.base_url + "/login/", timeout=10)
    r = session.post(stack.base_url + "/login/", timeout=30, headers={"Referer": stack.base_url + "/login/"},
                     data={"username": user, "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert r.status_code == 200 and "Log out" in r.text, r.text[:500]
    return session


def page_post(session: requests.Session, stack: Stack, path: str, data: dict[str, str]) -> requests.Response:
    return session.post(stack.base_url + path, data={**data, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                        headers={"Referer": stack.base_url + path}, allow_redirects=False, timeout=30)


def offsets(stack: Stack, topic: str, time: str) -> list[str]:
    """kafka-get-offsets: 'topic:partition:offset' per partition, at the log's start (-2) or end (-1)."""
    return sorted(stack.cluster.tool("kafka-get-offsets", "--topic", topic, "--time", time).split())


def overrides(stack: Stack, topic: str) -> dict[str, str]:
    """kafka-configs --describe (without --all): the topic's own overrides only."""
    out = stack.cluster.tool("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic)
    found = {}
    for line in out.splitlines():
        line = line.strip()
        if "=" in line and not line.startswith("Dynamic configs"):
            key, _, rest = line.partition("=")
            found[key] = rest.split(" sensitive=")[0]
    return found


def test_a_purge_naming_neither_offsets_nor_all_is_refused_and_the_topic_keeps_its_records(stack: Stack) -> None:
    name = make_topic(stack, "keep", partitions=2, rf=3)
    produce(stack, name, 200)
    starts, ends = offsets(stack, name, "-2"), offsets(stack, name, "-1")
    assert starts == [f"{name}:0:0", f"{name}:1:0"] and sum(int(e.rsplit(":", 1)[1]) for e in ends) == 200
    nothing_named: list[dict[str, Any]] = [{}, {"offsets": {}}, {"all": False}]
    for body in nothing_named:
        r = post(stack, API + name + "/records/", body, method="delete")
        assert r.status_code == 400 and "'all'" in r.json()["detail"], r.text
    operator = page_session(stack, "operator")
    r = page_post(operator, stack, f"/clusters/local/topics/{name}/purge/", {"offsets": "", "apply": "1"})
    assert r.status_code == 400 and "nothing was deleted" in r.text
    assert offsets(stack, name, "-2") == starts and offsets(stack, name, "-1") == ends
    entries = [e for e in stack.get("/api/v1/audit/").json()["entries"] if e["target"] == name]
    assert [e["outcome"] for e in entries if e["action"] == "purge_records"] == ["refused"] * 4


def test_a_config_edit_naming_one_key_leaves_the_other_overrides_in_place(stack: Stack) -> None:
    name = make_topic(stack, "onekey", partitions=1, rf=3, configs={"retention.ms": "7200000", "max.message.bytes": "2000000"})
    assert overrides(stack, name) == {"retention.ms": "7200000", "max.message.bytes": "2000000"}
    operator = page_session(stack, "operator")
    r = page_post(operator, stack, f"/clusters/local/topics/{name}/configs/", {"configs": "retention.ms=86400000", "apply": "1"})
    assert r.status_code == 302, r.text[:2000]
    assert overrides(stack, name) == {"retention.ms": "86400000", "max.message.bytes": "2000000"}
    r = post(stack, API + name + "/configs/", {"set": {"max.message.bytes": "3000000"}}, method="patch")
    assert r.status_code == 200, r.text
    assert overrides(stack, name) == {"retention.ms": "86400000", "max.message.bytes": "3000000"}
    r = page_post(operator, stack, f"/clusters/local/topics/{name}/configs/", {"configs": "", "remove": "max.message.bytes",
                                                                               "apply": "1"})
    assert r.status_code == 302, r.text[:2000]
    assert overrides(stack, name) == {"retention.ms": "86400000"}
