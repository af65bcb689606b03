"""Settings of bench.sockets_load's web process: the test suite's, plus the simulated cluster "sim"
(bench.simulate's watcher publishes it; this process only reads its snapshots, never Kafka)."""

from console.gateway.config import ClusterConfig
from tests.settings import *  # noqa: F403

KAFKA_CLUSTERS = (*KAFKA_CLUSTERS, ClusterConfig(name="sim", bootstrap_servers="127.0.0.1:9"))  # noqa: F405
