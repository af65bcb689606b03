"""Topic administration: create, add partitions, delete records, delete; topic and broker configs."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions, NewTopic

from console.gateway.connections import Connections
from console.gateway.errors import NotFound
from console.gateway.types import ConfigValue

# librdkafka reports the source as a plain int: key the table by the enum's values.
_SOURCES = {
    ConfigSource.DEFAULT_CONFIG.value: "default",
    ConfigSource.STATIC_BROKER_CONFIG.value: "static broker",
    ConfigSource.DYNAMIC_BROKER_CONFIG.value: "dynamic broker",
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value: "dynamic default broker",
    ConfigSource.DYNAMIC_TOPIC_CONFIG.value: "dynamic topic",
}


def _incremental(set_values: dict[str, str], delete: list[str]) -> list[ConfigEntry]:
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_values.items()]
    return entries + [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]


class TopicAdmin(Connections):
    """Topics and configs."""

    # Topics ------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str] | None = None,
                     validate_only: bool = False) -> None:
        def run() -> None:
            new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=configs or {})
            futures = self._admin_client().create_topics(
                [new], request_timeout=self.timeout, operation_timeout=self.timeout, validate_only=validate_only
            )
            self._result(futures[name])

        self._call(f"create topic '{name}'", run)

    def add_partitions(self, topic: str, total: int, validate_only: bool = False) -> None:
        def run() -> None:
            futures = self._admin_client().create_partitions(
                [NewPartitions(topic, total)], request_timeout=self.timeout, operation_timeout=self.timeout,
                validate_only=validate_only,
            )
            self._result(futures[topic])

        self._call(f"add partitions to topic '{topic}'", run)

    def delete_records(self, topic: str, before: dict[int, int]) -> dict[int, int]:
        """Delete every record below the given offset of each partition (-1: all of it).
        Returns the new start offset (low watermark) of each partition."""

        def run() -> dict[int, int]:
            admin = self._admin_client()
            if not self._cached_topics(admin, {topic}, time.monotonic() + self.timeout):
                raise NotFound(f"Topic '{topic}' does not exist on cluster '{self.name}'.")
            request = [RdTopicPartition(topic, p, o) for p, o in before.items()]
            futures = admin.delete_records(
                request, request_timeout=self.timeout, operation_timeout=self.timeout
            )
            return {tp.partition: self._result(f).low_watermark for tp, f in futures.items()}

        return self._call(f"delete records of topic '{topic}'", run)

    def delete_topic(self, name: str) -> None:
        def run() -> None:
            futures = self._admin_client().delete_topics([name], request_timeout=self.timeout, operation_timeout=self.timeout)
            self._result(futures[name])

        self._call(f"delete topic '{name}'", run)

    # Configs -----------------------------------------------------------------------------------
    def topic_configs(self, topics: Iterable[str], keys: frozenset[str] | None = None) -> dict[str, dict[str, str]]:
        """Effective configs of topics, optionally only the given keys."""
        names = list(topics)
        if not names:
            return {}

        def run() -> dict[str, dict[str, str]]:
            result: dict[str, dict[str, str]] = {}
            for start in range(0, len(names), 500):
                resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in names[start : start + 500]]
                futures = self._admin_client().describe_configs(resources, request_timeout=self.timeout)
                for res, fut in futures.items():
                    try:
                        entries = self._result(fut)
                    except KafkaException:
                        continue  # deleted meanwhile
                    result[res.name] = {
                        k: e.value for k, e in entries.items() if (keys is None or k in keys) and e.value is not None
                    }
            return result

        return self._call("describe topic configs", run)

    def describe_topic_configs(self, topic: str) -> list[ConfigValue]:
        """Every config of a topic with where its value comes from; sensitive values are masked."""

        def run() -> list[ConfigValue]:
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
            futures = self._admin_client().describe_configs([resource], request_timeout=self.timeout)
            entries = self._result(next(iter(futures.values())))
            return sorted(
                (
                    ConfigValue(
                        name=e.name,
                        value=None if e.is_sensitive else e.value,
                        source=_SOURCES.get(int(e.source), "unknown"),
                        is_default=bool(e.is_default),
                        is_sensitive=bool(e.is_sensitive),
                        is_read_only=bool(e.is_read_only),
                    )
                    for e in entries.values()
                ),
                key=lambda c: c.name,
            )

        return self._call(f"describe the configs of topic '{topic}'", run)

    def alter_topic_configs(self, topic: str, set_values: dict[str, str], delete: list[str], validate_only: bool) -> None:
        """Incremental alter: set some keys, return others to their default; nothing else changes."""
        entries = _incremental(set_values, delete)

        def run() -> None:
            resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
            futures = self._admin_client().incremental_alter_configs(
                [resource], request_timeout=self.timeout, validate_only=validate_only
            )
            self._result(next(iter(futures.values())))

        self._call(f"alter the configs of topic '{topic}'", run)

    def alter_configs(self, kind: str, name: str, set_values: dict[str, str], delete: list[str]) -> None:
        """Incremental alter of a broker's ("broker", "1") or a topic's ("topic", "orders") dynamic configs."""
        entries = _incremental(set_values, delete)
        if not entries:
            return
        rtype = ConfigResource.Type.BROKER if kind == "broker" else ConfigResource.Type.TOPIC

        def run() -> None:
            resource = ConfigResource(rtype, name, incremental_configs=entries)
            futures = self._admin_client().incremental_alter_configs([resource], request_timeout=self.timeout)
            self._result(next(iter(futures.values())))

        self._call(f"alter the configs of {kind} '{name}'", run)

    def dynamic_configs(self, kind: str, names: Iterable[str], keys: frozenset[str]) -> dict[str, dict[str, str]]:
        """The given keys where they are set dynamically on these brokers or topics (not defaults)."""
        wanted = sorted(set(names))
        rtype = ConfigResource.Type.BROKER if kind == "broker" else ConfigResource.Type.TOPIC
        dynamic = {ConfigSource.DYNAMIC_BROKER_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value}

        def run() -> dict[str, dict[str, str]]:
            out: dict[str, dict[str, str]] = {}
            for start in range(0, len(wanted), 200):
                resources = [ConfigResource(rtype, n) for n in wanted[start : start + 200]]
                futures = self._admin_client().describe_configs(resources, request_timeout=self.timeout)
                for res, fut in futures.items():
                    try:
                        entries = self._result(fut)
                    except KafkaException:
                        continue  # a topic deleted meanwhile
                    out[res.name] = {k: e.value or "" for k, e in entries.items()
                                     if k in keys and int(e.source) in dynamic and e.value}
            return out

        return self._call(f"describe {kind} configs", run)
