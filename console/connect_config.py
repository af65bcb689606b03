"""Which Kafka Connect clusters sit beside each Kafka cluster, read from the environment at start-up.

In KAFKA_CLUSTERS_FILE each cluster may list `"connect": [{"name", "url", "username", "password",
"ca"}]`; the one cluster given by KAFKA_* variables takes KAFKA_CONNECT_URL (and _USERNAME,
_PASSWORD, _CA); the local development cluster gets the local worker (`manage.py connectworker`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from console.env import SettingError, env_str
from console.gateway.config import ClusterConfig

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEYS = {"name", "url", "username", "password", "ca"}


@dataclass(frozen=True)
class ConnectConfig:
    name: str
    url: str
    username: str = ""
    password: str = field(default="", repr=False)
    ca: str = ""  # a CA bundle to check an https worker's certificate against; empty: the system's


def _validate(raw: object, where: str) -> ConnectConfig:
    if not isinstance(raw, dict):
        raise SettingError(f"{where}: each Connect cluster must be a JSON object with name and url, not {raw!r}")
    raw = {k: v for k, v in raw.items() if v is not None}
    unknown = set(raw) - _KEYS
    if unknown:
        raise SettingError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    name = str(raw.get("name", "connect"))
    if not _NAME.match(name):
        raise SettingError(f"{where}: Connect cluster name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
    url = str(raw.get("url", "")).strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+(/\S*)?$", url):
        raise SettingError(f"{where}: url must be http(s)://host:port of a Connect worker's REST API, not {url!r}")
    ca = str(raw.get("ca", ""))
    if ca and not Path(ca).is_file():
        raise SettingError(f"{where}: ca {ca!r} is not a readable file")
    return ConnectConfig(name=name, url=url, username=str(raw.get("username", "")),
                         password=str(raw.get("password", "")), ca=ca)


def _unique(found: tuple[ConnectConfig, ...], where: str) -> tuple[ConnectConfig, ...]:
    names = [c.name for c in found]
    if len(set(names)) != len(names):
        raise SettingError(f"{where}: Connect cluster names must be unique, got {names}")
    return found


def load_connect_clusters(clusters: tuple[ClusterConfig, ...], local_url: str) -> dict[str, tuple[ConnectConfig, ...]]:
    """Each Kafka cluster's Connect clusters, by the Kafka cluster's name (an empty tuple: none)."""
    result: dict[str, tuple[ConnectConfig, ...]] = {c.name: () for c in clusters}
    path = env_str("KAFKA_CLUSTERS_FILE", "")
    if path:
        # load_clusters has read and checked this file already; only the "connect" lists are new here.
        for i, item in enumerate(json.loads(Path(path).read_text())):
            listed = item.get("connect") or []
            where = f"{path}[{i}].connect"
            if not isinstance(listed, list):
                raise SettingError(f"{where} must be a JSON list of Connect clusters")
            result[str(item["name"])] = _unique(tuple(_validate(c, f"{where}[{j}]") for j, c in enumerate(listed)), where)
    elif env_str("KAFKA_BOOTSTRAP_SERVERS", ""):
        url = env_str("KAFKA_CONNECT_URL", "")
        if url:
            result[clusters[0].name] = (_validate({"name": "connect", "url": url,
                                                   "username": env_str("KAFKA_CONNECT_USERNAME", ""),
                                                   "password": env_str("KAFKA_CONNECT_PASSWORD", ""),
                                                   "ca": env_str("KAFKA_CONNECT_CA", "")}, "KAFKA_CONNECT_* variables"),)
    else:
        result.update({c.name: (ConnectConfig(name="local", url=local_url),) for c in clusters if c.local})
    return result
