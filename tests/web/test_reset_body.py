"""A reset names what its target needs before anything is asked of Kafka (found by the API fuzzer:
`{"to": "group"}` without `from_group` used to reach Kafka and answer 500)."""

from __future__ import annotations

import pytest

API = "/api/v1/clusters/local/consumer-groups/some~2Fgroup/offsets"


@pytest.mark.parametrize(("body", "field"), [
    ({"to": "group"}, "from_group"),
    ({"to": "offset"}, "offset"),
    ({"to": "shift", "dry_run": True}, "shift"),
    ({"to": "timestamp"}, "timestamp"),
])
def test_a_reset_without_what_its_target_needs_is_a_400_naming_the_field(client_as, snapshot, body: dict, field: str) -> None:
    r = client_as("operator").post(API, body, content_type="application/json")
    assert r.status_code == 400, r.content
    assert f"'{field}' is required with to={body['to']}" in r.json()["detail"]
