"""schemathesis over the console's own OpenAPI schema, as an operator, against the running stack.

Every operation in `/api/schema/` gets a bounded number of generated requests (valid and invalid
bodies, odd path and query values). Two checks: no answer is a 5xx, and every answer conforms to
what the schema declares for it. Changes that take `dry_run` are sent as dry runs, so the fuzzer
cannot create ten thousand partitions on the test cluster; the rest (produce, purge, resets) land
on random names, which the console must refuse cleanly.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.conftest import Stack

pytestmark = pytest.mark.cluster

EXAMPLES = 12  # per operation: the suite stays bounded (a few hundred requests in all)


@pytest.fixture(scope="module")
def api_schema(stack: Stack) -> Any:
    r = stack.get("/api/schema/", user="operator", headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text[:300]
    raw = r.json()
    assert raw["paths"], "the schema lists no operations"
    return schemathesis.openapi.from_dict(raw)


schema = schemathesis.pytest.from_fixture("api_schema")


def _dry(case: Any) -> None:
    body = case.body
    if isinstance(body, dict) and "dry_run" in body:
        body["dry_run"] = True
    if isinstance(body, dict) and case.method == "POST" and case.path.endswith("/topics/"):
        body["dry_run"] = True  # never create topics, even when the generator leaves dry_run out


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_server_error_and_every_answer_matches_the_schema(case: Any, stack: Stack) -> None:
    _dry(case)
    session = requests.Session()
    session.headers["Authorization"] = f"Token {stack.tokens['operator']}"
    case.call_and_validate(base_url=stack.base_url, session=session, timeout=30,
                           checks=[not_a_server_error, response_schema_conformance])


def test_the_schema_types_every_request_body(stack: Stack) -> None:
    """No POST/PATCH/PUT body is an untyped object: each names its properties."""
    raw = stack.get("/api/schema/", user="operator", headers={"Accept": "application/json"}).json()
    components = raw.get("components", {}).get("schemas", {})
    untyped = []
    for path, ops in raw["paths"].items():
        for method, op in ops.items():
            if method not in {"post", "patch", "put"} or "requestBody" not in op:
                continue
            for media in op["requestBody"]["content"].values():
                body = media["schema"]
                if "$ref" in body:
                    body = components[body["$ref"].rsplit("/", 1)[1]]
                if not body.get("properties"):
                    untyped.append(f"{method.upper()} {path}")
    assert not untyped, untyped
