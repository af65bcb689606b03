"""The suite on PostgreSQL (TEST_DATABASE=postgres): a server of its own for each test session.

Debian's PostgreSQL (`make test-deps TEST_DATABASE=postgres` installs it), a new cluster made with
initdb at the session's start on TEST_POSTGRES_PORT (default: the test Redis port + 100) and removed
at its end, so sessions run side by side as they do on SQLite. Run as root, the server runs as the
`postgres` user, which may not enter the console's private var directory: its data then lives in a
directory of its own under the system's temporary directory. tests/settings.py points the console's
processes at the database `console` on it (the integration layer's stack, made empty at each start);
pytest-django makes its test database beside it (tests/postgres_session.py starts and stops it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import tests.workers  # noqa: F401 - an xdist worker's own ports and data first

ENABLED = os.environ.get("TEST_DATABASE", "sqlite") == "postgres"
PORT = int(os.environ.get("TEST_POSTGRES_PORT") or int(os.environ.get("TEST_REDIS_PORT") or 6391) + 100)
USER = "console"
DATABASE = "console"  # the stack's; pytest-django's is test_console
URL = f"postgres://{USER}@127.0.0.1:{PORT}/{DATABASE}"
_ROOT = Path(__file__).resolve().parent.parent
_TEST_VAR = Path(os.environ.get("TEST_VAR_DIR") or _ROOT / "var" / "test")
_AS_ROOT = os.geteuid() == 0
# The settings of a throwaway server: no durability (the data dies with the session), loopback only,
# and Debian's default connection limit, which the load test holds the console under.
_SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1", "unix_socket_directories": "", "fsync": "off", "synchronous_commit": "off",
    "full_page_writes": "off", "max_connections": "100", "shared_buffers": "32MB",
}


def bin_dir() -> Path:
    """Debian's PostgreSQL binaries, the newest version installed."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise RuntimeError("TEST_DATABASE=postgres needs Debian's PostgreSQL server: "
                           "`make test-deps TEST_DATABASE=postgres` (or apt-get install postgresql) installs it")
    return found[-1].parent


def _run(*args: str, timeout: float = 60) -> None:
    command = (["runuser", "-u", "postgres", "--"] if _AS_ROOT else []) + list(args)
    done = subprocess.run(command, cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def _pointer() -> Path:
    """The file that names the running server's data directory, for a later session to stop a server
    an interrupted one left behind."""
    return _TEST_VAR / "postgres.datadir"


def _stop(data: Path) -> None:
    if (data / "postmaster.pid").exists():
        with suppress(RuntimeError):  # (not running any more: its pid file was stale)
            _run(str(bin_dir() / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop", timeout=60)
    shutil.rmtree(data, ignore_errors=True)


def _new_data_dir() -> Path:
    if not _AS_ROOT:
        data = _TEST_VAR / "postgres"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True, mode=0o700)
        return data
    data = Path(tempfile.mkdtemp(prefix=f"console-test-postgres-{PORT}-"))
    shutil.chown(data, "postgres", "postgres")
    return data


def start() -> Path:
    """A new server on PORT; its data directory."""
    pointer = _pointer()
    if pointer.exists():
        _stop(Path(pointer.read_text().strip()))
        pointer.unlink()
    data = _new_data_dir()
    _TEST_VAR.mkdir(parents=True, exist_ok=True)
    pointer.write_text(str(data))
    bins = bin_dir()
    _run(str(bins / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
    options = " ".join(f"-c {name}={value!r}" if value == "" else f"-c {name}={value}" for name, value in _SERVER_SETTINGS.items())
    try:
        _run(str(bins / "pg_ctl"), "-D", str(data), "-l", str(data / "server.log"), "-w", "-t", "60",
             "-o", f"-p {PORT} {options}", "start", timeout=90)
    except RuntimeError as exc:
        log = data / "server.log"
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
        raise RuntimeError(f"the test PostgreSQL did not start on port {PORT}: {exc}\n{tail}") from None
    return data


def stop(data: Path) -> None:
    _stop(data)
    _pointer().unlink(missing_ok=True)


@contextmanager
def running_postgres() -> Iterator[str]:
    data = start()
    try:
        yield URL
    finally:
        stop(data)


def _admin() -> Any:
    import psycopg

    return psycopg.connect(host="127.0.0.1", port=PORT, user=USER, dbname="postgres", autocommit=True, connect_timeout=10)


def recreate(name: str = DATABASE) -> None:
    """An empty database `name` (the stack's: nothing of an earlier start is read as this one's)."""
    from psycopg import sql

    with _admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def client_connections(database: str = DATABASE) -> int:
    """The server's client connections to `database`, as pg_stat_activity counts them (this one's excluded)."""
    with _admin() as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                           "AND datname = %s AND pid <> pg_backend_pid()", [database]).fetchone()
    return int(row[0]) if row else 0
