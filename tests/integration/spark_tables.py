"""Compute every analytics table from the unit tests' synthetic samples on a given Spark master and
print them as JSON (rows sorted): `python -m tests.integration.spark_tables MASTER SAMPLES_FILE`.

Run in its own process because Spark allows one session per process: the standalone-cluster test
runs it once with `local[2]` and once with `spark://...` and compares the output."""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from typing import Any


def plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 9)
    return value


def main() -> None:
    master, samples_file = sys.argv[1], sys.argv[2]
    from analytics.jobs.pipeline import Params, compute
    from analytics.jobs.samples import parse_samples
    from analytics.session import spark_session
    from tests.spark_conf import SMALL_SPARK_CONF

    spark = spark_session(master, {**SMALL_SPARK_CONF, "spark.executor.memory": "512m", "spark.cores.max": "1",
                                   "spark.sql.shuffle.partitions": "2"})
    samples = parse_samples(spark.read.text(samples_file))
    results = compute(samples, Params())
    out: dict[str, Any] = {}
    for name, df in sorted(results.items()):
        rows = [{k: plain(v) for k, v in r.asDict(recursive=True).items()} for r in df.collect()]
        out[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    out["_master"] = spark.sparkContext.master
    spark.stop()
    print(json.dumps(out, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
