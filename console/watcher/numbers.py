"""What the watcher's per-partition structures assume of partition numbers."""

# Kafka numbers a topic's partitions 0 to its count less one: structures that keep something per
# partition keep it in a list or array by number per topic (sampler.PartitionNames, the time tables'
# rows in consumers_app.time_tables), 4 to 16 bytes a partition instead of a dict entry and its key.
# A number below 0, or this and above (never given by Kafka), is kept apart in a dict, so no array
# grows to a million entries for one odd number.
PARTITION_NUMBERS = 1 << 20
