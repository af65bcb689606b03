"""ClusterGateway: every Kafka call for one cluster, as one object per cluster.

Each Kafka area is a class of its own module, built on the cluster's cached clients
(connections.Connections); ClusterGateway is all of them at once, so an app holds one object per
cluster (`console.gateway.for_cluster`) and never needs to know which area a call belongs to:

- cluster.py: metadata and topic descriptions
- brokers.py: racks, the KRaft quorum, log dir sizes
- topics.py: create, grow, purge and delete topics; topic and broker configs
- offsets.py: partition offsets, latest, earliest and by time
- groups.py: consumer and share groups, committed offsets, resets and deletes
- reassignments.py: replica reassignments and leader elections
- acls.py: ACLs and the authorizer's settings
- transactions.py: transactions, the producers of partitions, last stable offsets, aborts
- tiered.py: where remote storage (KIP-405) and the local log start and end, per partition
- reachability.py: whether each broker's port accepts a connection

Message browsing and producing are in messages/, the demo's traffic clients in traffic.py.
"""

from __future__ import annotations

from console.gateway.acls import AclAdmin
from console.gateway.brokers import BrokerReads
from console.gateway.cluster import ClusterReads
from console.gateway.groups import GroupAdmin
from console.gateway.offsets import OffsetReads
from console.gateway.quotas import ClientQuotas
from console.gateway.reachability import BrokerProbes
from console.gateway.reassignments import Reassignments
from console.gateway.scram import ScramUsers
from console.gateway.tiered import TieredReads
from console.gateway.topics import TopicAdmin
from console.gateway.transactions import TransactionAdmin


class ClusterGateway(ClusterReads, BrokerReads, TopicAdmin, OffsetReads, GroupAdmin, Reassignments, ScramUsers, ClientQuotas,
                     AclAdmin, BrokerProbes, TransactionAdmin, TieredReads):
    """All Kafka calls for one cluster. Thread-safe; one instance per cluster per process."""
