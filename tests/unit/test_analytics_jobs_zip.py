"""analytics.session.jobs_zip: the jobs' Python shipped to Spark's executors, one file per content, kept
in a private directory of the console's."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

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


def test_the_archive_is_kept_in_a_private_directory_under_var(tmp_path: Path, settings: Any) -> None:
    from analytics.tasks import spark_jobs_dir

    settings.VAR_DIR = tmp_path / "var"
    path = jobs_zip(spark_jobs_dir())
    assert path.parent == tmp_path / "var" / "spark-jobs"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_directory_open_to_others_is_made_private(tmp_path: Path) -> None:
    folder = tmp_path / "jobs"
    folder.mkdir()
    folder.chmod(0o777)
    jobs_zip(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_link_in_place_of_the_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "jobs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PermissionError, match="private directory"):
        jobs_zip(tmp_path / "jobs")


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_directory_or_file_of_another_user_is_never_used(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 4321, -1)
    with pytest.raises(PermissionError, match="not a directory of this user's"):
        jobs_zip(theirs)

    mine = tmp_path / "mine"
    path = jobs_zip(mine)
    os.chown(path, 4321, -1)  # same name and bytes, but another user's: written again, as ours
    assert jobs_zip(mine) == path
    assert path.stat().st_uid == os.getuid()
