"""analytics.session.jobs_zip: the jobs' Python shipped to Spark's executors, one file per content."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from analytics.session import jobs_zip


def test_every_session_of_the_same_code_reuses_one_file(tmp_path: Path) -> None:
    first = jobs_zip(tmp_path)
    second = jobs_zip(tmp_path)
    assert first == second
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name]  # no file per call, no partial left
    assert first.name.startswith(f"kafka-console-analytics-jobs-{os.getuid()}-")  # (one per user: each can read its own)
    names = zipfile.ZipFile(first).namelist()
    assert "analytics/__init__.py" in names and "analytics/records.py" in names
    assert any(n.startswith("analytics/jobs/") for n in names)


def test_a_damaged_file_of_that_name_is_written_again(tmp_path: Path) -> None:
    path = jobs_zip(tmp_path)
    good = path.read_bytes()
    path.write_bytes(b"truncated")
    assert jobs_zip(tmp_path) == path
    assert path.read_bytes() == good
    assert zipfile.ZipFile(path).testzip() is None
