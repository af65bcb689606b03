"""Browsing a topic's messages: bounded scans (scan.py), a live tail (tail.py) and producing (produce.py),
all returning the records of records.py.

Reads use a librdkafka consumer with assign() only: it never joins its group and never commits,
so browsing leaves no trace on the cluster. A scan takes the end offsets (high watermarks) when it
starts and stops there, so it never waits for new messages; `tail` is the one that waits.
"""
