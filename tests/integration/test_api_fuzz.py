"""schemathesis over the console's own OpenAPI schema, as an operator, against the running stack.

Every operation in `/api/schema/` gets a bounded number of generated requests (valid and invalid
bodies, odd path and query values). Two checks: no answer is a 5xx, and every answer conforms to
what the schema declares for it. Changes that take `dry_run` are sent as dry runs, so the fuzzer
cannot create ten thousand partitions on the test cluster; the rest (produce, purge, resets) land
on random names, which the console must refuse cleanly.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.conftest import Stack, unique, wait_for

pytestmark = pytest.mark.cluster

EXAMPLES = 12  # per operation: the suite stays bounded (a few hundred requests in all)


def load_schema(stack: Stack) -> Any:
    r = stack.get("/api/schema/", user="operator", headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text[:300]
    raw = r.json()
    assert raw["paths"], "the schema lists no operations"
    return schemathesis.openapi.from_dict(raw)


@pytest.fixture(scope="module")
def fuzz_topic(stack: Stack) -> str:
    """A topic of the fuzzer's own: half the generated requests name it, so bodies reach the code
    behind the path checks (produce, purge, configs) instead of stopping at an unknown topic."""
    topic = unique("fuzz")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 30, what="the fuzz topic")
    return topic


def _dry(case: Any) -> None:
    """A generated dry_run is always true, and topic creation is always a dry run: the fuzzer must
    not create ten thousand partitions. Changes without dry_run (resets, produce, purge) land on
    names the fuzzer made up, or on its own topic."""
    body = case.body
    if case.method == "POST" and case.path.endswith("/analytics/runs/"):
        case.body = {"start_ms": 2, "end_ms": 1}  # refused (400): a dozen Spark runs would load the rest of the suite
        return
    if isinstance(body, dict) and body.get("action") == "execute":
        body["action"] = "cancel"  # a reassignment job is never executed by the fuzzer: a cancel discards a plan
    if isinstance(body, dict) and ("dry_run" in body or (case.method == "POST" and case.path.endswith("/topics/"))):
        body["dry_run"] = True


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_no_server_error_and_every_answer_matches_the_schema(stack: Stack, fuzz_topic: str, mode: GenerationMode,
                                                             connect_worker: str) -> None:
    # (A Connect worker answers, as Kafka does: an unreachable one is a 503 by design, which this test counts as a fault.)
    schema = load_schema(stack)
    session = requests.Session()
    session.headers["Authorization"] = f"Token {stack.tokens['operator']}"
    failures: list[str] = []
    calls = 0
    ungenerated: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20, [op.label for op in operations]
    for operation in operations:
        names = {p.name for p in operation.path_parameters}
        fixed = {"cluster": "local"} if "cluster" in names else {}
        ours = {**fixed, "topic": fuzz_topic} if "topic" in names else fixed
        strategy = st.one_of(operation.as_strategy(mode, path_parameters=ours),
                             operation.as_strategy(mode, path_parameters=fixed))

        @given(case=strategy)
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
        def run(case: Any) -> None:
            nonlocal calls
            _dry(case)
            calls += 1
            try:
                case.call_and_validate(base_url=stack.base_url, session=session, timeout=30,
                                       checks=[not_a_server_error, response_schema_conformance])
            except Exception as exc:  # noqa: BLE001 - collected per operation, reported together
                failures.append(f"{case.operation.label}: {case.method} {case.formatted_path} body={str(case.body)[:200]}: "
                                f"{str(exc)[:600]}")

        before = calls
        with contextlib.suppress(Unsatisfiable):  # nothing to make invalid (only free strings as inputs)
            run()
        if calls == before:
            ungenerated.append(operation.label)
    print(f"\n{mode.value}: {calls} requests over {len(operations)} operations, {len(failures)} failures; "
          f"nothing generated for {ungenerated}")
    assert not failures, "\n".join(failures[:20])
    if mode == GenerationMode.POSITIVE:
        assert not ungenerated, f"the schema allows no valid request to {ungenerated}"


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
