"""Replica placement plans that move as little data as possible (ALGORITHMS.md section 5).

Pure functions over a cluster layout: no Kafka calls, no I/O.
- `model`: the layout (brokers with racks, partitions with replicas, leaders and sizes), the
  operator's request and what it may touch (`resolve`).
- `planner`: `plan()` answers a request with the fewest bytes copied (`state` keeps its working set).
- `result`: the `Plan`: every partition's replicas before and after, per-broker loads, totals; an
  imported plan is shown the same way (`plan_from_reassignment`).
- `generate`: what `kafka-reassign-partitions --generate` would propose, to show beside a plan.
- `kafka_json`: Kafka's reassignment JSON, written and read back (refusing bad input in one sentence).
"""
