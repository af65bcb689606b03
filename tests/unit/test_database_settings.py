"""console/database.py: DATABASE_URL and the pool settings as Django's DATABASES["default"]."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db.backends.sqlite3.base import DatabaseWrapper

from console.database import database_settings
from console.env import SettingError

SQLITE_DEFAULT = "sqlite:////tmp/console-test.sqlite3"
POOL_VARS = ["DATABASE_URL", "DATABASE_POOL_MAX_SIZE", "DATABASE_POOL_MIN_SIZE", "DATABASE_POOL_TIMEOUT",
             "DATABASE_POOL_MAX_IDLE"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in POOL_VARS:
        monkeypatch.delenv(name, raising=False)


def test_without_a_database_url_the_console_keeps_its_sqlite_file_with_wal_and_no_pool():
    config = database_settings(SQLITE_DEFAULT)
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == "/tmp/console-test.sqlite3"
    assert config["OPTIONS"] == {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE"}
    assert config["CONN_MAX_AGE"] == 0


def test_postgresql_gets_a_pool_of_ten_connections_per_process_and_no_connection_kept_per_thread(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://console:pw@db.example:5432/console?sslmode=require")
    config = database_settings(SQLITE_DEFAULT)
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert config["CONN_MAX_AGE"] == 0  # (Django refuses a pool with persistent connections)
    assert config["CONN_HEALTH_CHECKS"] is True
    assert config["OPTIONS"]["sslmode"] == "require"
    pool = config["OPTIONS"]["pool"]
    assert (pool["min_size"], pool["max_size"], pool["timeout"]) == (1, 10, 10.0)


def test_the_pool_bounds_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://console@db.example/console")
    monkeypatch.setenv("DATABASE_POOL_MAX_SIZE", "4")
    monkeypatch.setenv("DATABASE_POOL_MIN_SIZE", "6")
    monkeypatch.setenv("DATABASE_POOL_TIMEOUT", "2.5")
    pool = database_settings(SQLITE_DEFAULT)["OPTIONS"]["pool"]
    assert (pool["min_size"], pool["max_size"], pool["timeout"]) == (4, 4, 2.5)  # (a minimum above the maximum is cut)


def test_a_pool_size_of_zero_means_a_connection_per_request_for_an_outside_pooler(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://console@pgbouncer.example:6432/console")
    monkeypatch.setenv("DATABASE_POOL_MAX_SIZE", "0")
    config = database_settings(SQLITE_DEFAULT)
    assert "pool" not in config["OPTIONS"]
    assert config["CONN_MAX_AGE"] == 0


@pytest.mark.parametrize(("name", "value"), [("DATABASE_POOL_MAX_SIZE", "ten"), ("DATABASE_POOL_MAX_SIZE", "-1"),
                                             ("DATABASE_POOL_TIMEOUT", "0")])
def test_a_bad_pool_setting_is_refused_at_start_with_its_name(monkeypatch, name, value):
    monkeypatch.setenv("DATABASE_URL", "postgres://console@db.example/console")
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingError, match=name):
        database_settings(SQLITE_DEFAULT)


def test_a_transaction_that_read_first_still_writes_after_another_process_wrote(tmp_path: Path, django_db_blocker: Any) -> None:
    """Two connections to one SQLite file, as two console processes hold: a transaction reads, another
    connection writes meanwhile, then the transaction writes. With transactions begun DEFERRED the last
    write is refused at once ("database is locked": its snapshot is older than the other's commit);
    begun IMMEDIATE, the other write waits for the transaction and both land."""
    with django_db_blocker.unblock():  # (a file of the test's own, not the test database)
        _read_then_write(tmp_path)


def _read_then_write(tmp_path: Path) -> None:
    config = {**database_settings(f"sqlite:///{tmp_path / 'db.sqlite3'}"), "TIME_ZONE": None, "ATOMIC_REQUESTS": False,
              "AUTOCOMMIT": True, "TEST": {}}
    setup = DatabaseWrapper(config, alias="setup")
    with setup.cursor() as c:
        c.execute("CREATE TABLE t (v INTEGER)")
    setup.close()
    first = DatabaseWrapper(config, alias="first")
    errors: list[BaseException] = []

    def other_process() -> None:
        other = DatabaseWrapper(config, alias="other")
        try:
            with other.cursor() as c:
                c.execute("INSERT INTO t VALUES (2)")
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)
        finally:
            other.close()

    writer = threading.Thread(target=other_process)
    # (what transaction.atomic() does on a connection of its own: BEGIN, statements, COMMIT)
    first.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)
    with first.cursor() as c:
        c.execute("SELECT count(*) FROM t")
        writer.start()
        time.sleep(0.3)
        c.execute("INSERT INTO t VALUES (1)")
    first.commit()
    first.set_autocommit(True)
    writer.join(30)
    assert not errors, errors
    with first.cursor() as c:
        c.execute("SELECT v FROM t ORDER BY v")
        assert [row[0] for row in c.fetchall()] == [1, 2]
    first.close()
