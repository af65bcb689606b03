"""var/ and what the console writes there are its user's only; a var/ others can read is reported
once at start (console/private.py)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _manage(var: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KAFKA_", "DATABASE_URL", "CONSOLE_", "DJANGO_SETTINGS_MODULE"))}
    env.update(CONSOLE_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="console.settings")
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    return done


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_var_its_secret_key_and_database_are_private_under_a_wide_umask(tmp_path: Path) -> None:
    var = tmp_path / "var"
    old = os.umask(0o022)  # the usual umask, which the child inherits and the console narrows
    try:
        done = _manage(var, "migrate", "-v0")
    finally:
        os.umask(old)
    assert _mode(var) == 0o700
    assert _mode(var / "secret_key") == 0o600
    assert _mode(var / "console.sqlite3") == 0o600
    assert "can read the console's private files" not in done.stderr


def test_a_var_others_can_read_is_reported_in_one_line(tmp_path: Path) -> None:
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)
    (var / "console.sqlite3").touch()
    (var / "console.sqlite3").chmod(0o644)

    done = _manage(var, "check")
    lines = [line for line in done.stderr.splitlines() if "can read the console's private files" in line]
    assert len(lines) == 1
    assert f"{var} (mode 0755)" in lines[0] and f"{var / 'console.sqlite3'} (mode 0644)" in lines[0]
    assert f"chmod 700 {var}" in lines[0]
