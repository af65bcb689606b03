"""The analytics jobs: plain PySpark, each a function from DataFrames to DataFrames, no Django.

samples     read the sample topic (Kafka connector), parse records, explode end and committed offsets
throughput  messages/s and bytes/s per partition and topic at 1 min, 5 min and 1 h
lag         lag and time-lag history per group and partition, catch-up forecasts
status      Burrow's lag status replayed over the samples, per partition and group, and its runs
inventory   skew and hot partitions, idle topics, orphaned groups
pipeline    all of them over one range, written as Parquet plus summary.json
"""
