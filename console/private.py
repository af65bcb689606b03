"""The console's files are its own: var/ (secret key, SQLite database, logs, cluster data) is made
0700 and what the console writes there 0600, and a var/ or database file that other users can read
is reported once at start.

Each entry point (manage.py, console/asgi.py, console/celery.py) calls `restrict_umask()` before
anything is written, so files made by libraries (SQLite's database and journal, Kafka's logs of the
local cluster, Celery beat's schedule) are private too: under the usual 022 umask they were readable
by every user of the machine.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077


def restrict_umask() -> None:
    os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> Path:
    """`path` made (0700) if missing; an existing one is left as it is (the start-up check reports it)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def write_private(path: Path, text: str) -> None:
    """A new file readable by its owner only, whatever the umask (O_EXCL: never through a planted link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def exposed(paths: Iterable[Path]) -> list[str]:
    """The paths (of those that exist) that users other than the owner may read, with their modes."""
    found = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o044 or (path.is_dir() and mode & 0o077):
            found.append(f"{path} (mode {mode:04o})")
    return found


def warn_if_exposed(var_dir: Path, files: Iterable[Path]) -> list[str]:
    """Logs one warning line naming what other users can read, with the commands that fix it."""
    found = exposed([var_dir, *files])
    if found:
        log.warning("Other users of this machine can read the console's private files: %s. Fix: chmod 700 %s and "
                    "chmod 600 the files in it.", ", ".join(found), var_dir)
    return found


def check_at_start() -> list[str]:
    """The start-up check (ConsoleConfig.ready): var/, the secret key and a SQLite database."""
    files = [settings.VAR_DIR / "secret_key"]
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and str(database["NAME"]) != ":memory:":
        files.append(Path(database["NAME"]))
    return warn_if_exposed(settings.VAR_DIR, files)
