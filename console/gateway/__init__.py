"""The only door to Kafka. Everything outside this package talks to Kafka through it.

Apps import `console.gateway.for_cluster(name)` and the dataclasses in `console.gateway.types`;
they never import a Kafka client library (ruff's banned-api rule enforces it).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from django.conf import settings

from console.gateway.config import ClusterConfig
from console.gateway.errors import UnknownCluster

if TYPE_CHECKING:
    from console.gateway.client import ClusterGateway

_gateways: dict[str, ClusterGateway] = {}
_lock = threading.Lock()


def cluster_configs() -> tuple[ClusterConfig, ...]:
    configs: tuple[ClusterConfig, ...] = settings.KAFKA_CLUSTERS
    return configs


def cluster_config(name: str) -> ClusterConfig:
    for config in cluster_configs():
        if config.name == name:
            return config
    raise UnknownCluster(f"There is no cluster named '{name}'. Configured clusters: {', '.join(c.name for c in cluster_configs())}.")


def for_cluster(name: str) -> ClusterGateway:
    """The cached gateway of a configured cluster; UnknownCluster if there is none by that name."""
    from console.gateway.client import ClusterGateway

    config = cluster_config(name)
    with _lock:
        gateway = _gateways.get(name)
        if gateway is None:
            gateway = _gateways[name] = ClusterGateway(config, settings.KAFKA_REQUEST_TIMEOUT)
        return gateway


def for_bootstrap(bootstrap_servers: str, timeout: float = 3.0, **security: str) -> ClusterGateway:
    """An uncached gateway for an address that is not a configured cluster (dev tooling); `security`:
    ClusterConfig's security fields (security_protocol, sasl_username ...)."""
    from console.gateway.client import ClusterGateway

    return ClusterGateway(ClusterConfig(name=bootstrap_servers, bootstrap_servers=bootstrap_servers, **security),  # type: ignore[arg-type]
                          timeout)
