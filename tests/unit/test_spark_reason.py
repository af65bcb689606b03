"""A failed Spark run is shown with Spark's reason in one sentence, not a JVM stack."""

from __future__ import annotations

from analytics.tasks import spark_reason


class FakeJava:
    def __init__(self, text: str, cause: FakeJava | None = None) -> None:
        self.text, self.cause = text, cause

    def getCause(self) -> FakeJava | None:  # noqa: N802 - the JVM's method name
        return self.cause

    def toString(self) -> str:  # noqa: N802
        return self.text


class FakePy4JError(Exception):
    def __init__(self, java: FakeJava) -> None:
        super().__init__("An error occurred while calling o167.persist.\n: java.util.concurrent.ExecutionException ...\n\tat x")
        self.java_exception = java


def test_the_jvms_root_cause_without_its_package() -> None:
    root = FakeJava("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.")
    exc = FakePy4JError(FakeJava("java.util.concurrent.ExecutionException: wrapped", root))
    assert spark_reason(exc) == "Spark failed: UnknownTopicOrPartitionException: This server does not host this topic-partition."


def test_a_python_side_error_gives_its_first_meaningful_line() -> None:
    exc = RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.\n  at somewhere")
    assert spark_reason(exc) == "Spark failed: [JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number."
