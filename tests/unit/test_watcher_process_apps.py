"""The watcher's processes serve no page: `manage.py watch` and its sampling process do not load the
web server (daphne, and Twisted with it: 24 MB a process), the web processes do."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT

PROBE = """
import runpy, sys
sys.argv = ["manage.py", {command!r}, "--help"]
try:
    runpy.run_path("manage.py", run_name="__main__")
except SystemExit:
    pass
from django.conf import settings
print("LOADED", "daphne" in settings.INSTALLED_APPS, "twisted" in sys.modules)
"""


def probe(command: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"CONSOLE_PROCESS", "DJANGO_SETTINGS_MODULE"}}
    out = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED")]
    assert line, out.stdout[-2000:] + out.stderr[-2000:]
    return line[0]


def test_manage_py_watch_loads_no_web_server_and_runserver_does() -> None:
    assert probe("watch") == "LOADED False False"
    assert probe("runserver") == "LOADED True True"


def test_the_sampling_process_loads_no_web_server() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CONSOLE_PROCESS"}
    env["DJANGO_SETTINGS_MODULE"] = "console.settings"
    code = ("import sys\nfrom console.watcher.sampling_process import start_django\nstart_django()\n"
            "from django.conf import settings\nprint('LOADED', 'daphne' in settings.INSTALLED_APPS, 'twisted' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "LOADED False False" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
