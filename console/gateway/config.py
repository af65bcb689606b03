"""Which Kafka clusters the console administers, read from the environment at start-up."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from console.env import SettingError, env_str

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    ssl_ca_location: str = ""
    ssl_certificate_location: str = ""
    ssl_key_location: str = ""
    ssl_key_password: str = field(default="", repr=False)
    local: bool = False
    # The broker's `super.users` and `allow.everyone.if.no.acl.found`, which Kafka does not disclose
    # (DescribeConfigs hides super.users as sensitive): the permission check needs them declared.
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False

    def super_user_set(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.super_users.split(";") if p.strip())

    def librdkafka(self) -> dict[str, str]:
        """Connection settings in librdkafka's vocabulary."""
        conf = {"bootstrap.servers": self.bootstrap_servers, "security.protocol": self.security_protocol}
        optional = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
            "ssl.key.password": self.ssl_key_password,
        }
        conf.update({k: v for k, v in optional.items() if v})
        return conf

    def kafka_python(self) -> dict[str, object]:
        """Connection settings in kafka-python's vocabulary."""
        conf: dict[str, object] = {
            "bootstrap_servers": self.bootstrap_servers.split(","),
            "security_protocol": self.security_protocol,
        }
        optional: dict[str, str] = {
            "sasl_mechanism": self.sasl_mechanism,
            "sasl_plain_username": self.sasl_username,
            "sasl_plain_password": self.sasl_password,
            "ssl_cafile": self.ssl_ca_location,
            "ssl_certfile": self.ssl_certificate_location,
            "ssl_keyfile": self.ssl_key_location,
            "ssl_password": self.ssl_key_password,
        }
        conf.update({k: v for k, v in optional.items() if v})
        return conf


def _validate(raw: object, where: str) -> ClusterConfig:
    if not isinstance(raw, dict):
        raise SettingError(f"{where}: each cluster must be a JSON object with name and bootstrap_servers, not {raw!r}")
    # A key given as null means "not set", never the string "None". A cluster's Connect clusters are
    # read by console/connect_config.py: they are not part of the Kafka connection.
    raw = {k: v for k, v in raw.items() if v is not None and k != "connect"}
    known = set(ClusterConfig.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise SettingError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(known)}")
    name = str(raw.get("name", ""))
    if not _NAME.match(name):
        raise SettingError(f"{where}: cluster name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
    servers = str(raw.get("bootstrap_servers", "")).strip()
    if not servers or any(":" not in s for s in servers.split(",")):
        raise SettingError(f"{where}: bootstrap_servers must be host:port[,host:port...], not {servers!r}")
    protocol = str(raw.get("security_protocol", "PLAINTEXT")).upper()
    if protocol not in _PROTOCOLS:
        raise SettingError(f"{where}: security_protocol must be one of {sorted(_PROTOCOLS)}")
    flags = ("local", "allow_everyone_if_no_acl_found")
    values = {k: str(v) for k, v in raw.items() if k not in flags}
    values["security_protocol"] = protocol
    values["bootstrap_servers"] = servers
    return ClusterConfig(**values, **{f: _flag(raw.get(f, False), f"{where}: {f}") for f in flags})  # type: ignore[arg-type]


def _flag(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no", ""}:
        return False
    raise SettingError(f"{where} must be true or false, not {value!r}")


def local_bootstrap(base_port: int, nodes: int = 3) -> str:
    return ",".join(f"127.0.0.1:{base_port + 2 * i}" for i in range(nodes))


def load_clusters(devcluster_base_port: int, devcluster_connection: dict[str, str] | None = None) -> tuple[ClusterConfig, ...]:
    """The clusters to administer; without KAFKA_CLUSTERS_FILE or KAFKA_BOOTSTRAP_SERVERS the local
    cluster, with `devcluster_connection`'s security settings when it runs in secure mode."""
    path = env_str("KAFKA_CLUSTERS_FILE", "")
    if path:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise SettingError(f"KAFKA_CLUSTERS_FILE {path!r} cannot be read as JSON: {exc}") from None
        if not isinstance(data, list) or not data:
            raise SettingError(f"KAFKA_CLUSTERS_FILE {path!r} must hold a non-empty JSON list of clusters")
        clusters = tuple(_validate(item, f"{path}[{i}]") for i, item in enumerate(data))
    elif env_str("KAFKA_BOOTSTRAP_SERVERS", ""):
        clusters = (
            _validate(
                {
                    "name": env_str("KAFKA_CLUSTER_NAME", "main"),
                    "bootstrap_servers": env_str("KAFKA_BOOTSTRAP_SERVERS", ""),
                    "security_protocol": env_str("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT"),
                    "sasl_mechanism": env_str("KAFKA_SASL_MECHANISM", ""),
                    "sasl_username": env_str("KAFKA_SASL_USERNAME", ""),
                    "sasl_password": env_str("KAFKA_SASL_PASSWORD", ""),
                    "ssl_ca_location": env_str("KAFKA_SSL_CA_LOCATION", ""),
                    "ssl_certificate_location": env_str("KAFKA_SSL_CERTIFICATE_LOCATION", ""),
                    "ssl_key_location": env_str("KAFKA_SSL_KEY_LOCATION", ""),
                    "ssl_key_password": env_str("KAFKA_SSL_KEY_PASSWORD", ""),
                    "super_users": env_str("KAFKA_SUPER_USERS", ""),
                    "allow_everyone_if_no_acl_found": env_str("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND", "false"),
                },
                "KAFKA_* variables",
            ),
        )
    else:
        clusters = (
            ClusterConfig(name="local", bootstrap_servers=local_bootstrap(devcluster_base_port), local=True,
                          **(devcluster_connection or {})),  # type: ignore[arg-type]
        )
    names = [c.name for c in clusters]
    if len(set(names)) != len(names):
        raise SettingError(f"cluster names must be unique, got {names}")
    return clusters
