"""The watcher's processes serve no page and send no task: `manage.py watch` and its sampling process
do not load the web server (daphne, and Twisted with it: 24 MB a process), the web processes do; nor
Celery (9 MB a process), which every task module loads, so that a task is always sent through the
console's app."""

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
import console.watcher.loop, console.watcher.runner, console.watcher.sampling_process  # (what `watch` runs)
print("LOADED", "daphne" in settings.INSTALLED_APPS, "twisted" in sys.modules, "celery" in sys.modules)
"""


def probe(command: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"CONSOLE_PROCESS", "DJANGO_SETTINGS_MODULE"}}
    out = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED")]
    assert line, out.stdout[-2000:] + out.stderr[-2000:]
    return line[0]


def test_manage_py_watch_loads_no_web_server_and_runserver_does() -> None:
    assert probe("watch") == "LOADED False False False"
    assert probe("runserver").startswith("LOADED True True")


def test_the_sampling_process_loads_no_web_server() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CONSOLE_PROCESS"}
    env["DJANGO_SETTINGS_MODULE"] = "console.settings"
    code = ("import sys\nfrom console.watcher.sampling_process import start_django\nstart_django()\n"
            "from console.watcher.sampler import Sampler\nfrom console import gateway\n"
            "from django.conf import settings\n"
            "print('LOADED', 'daphne' in settings.INSTALLED_APPS, 'twisted' in sys.modules, 'celery' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "LOADED False False False" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


def test_every_task_module_sends_through_the_consoles_app() -> None:
    """A shared task sent before the console's Celery app exists would go through Celery's default
    app (an AMQP broker nobody runs): each task module loads the console's app itself."""
    env = {k: v for k, v in os.environ.items() if k != "CONSOLE_PROCESS"}
    env["DJANGO_SETTINGS_MODULE"] = "console.settings"
    # (loaded first in a request's thread, as a view's dispatch does; used from another thread)
    code = ("import sys, importlib, threading, django\ndjango.setup()\nassert 'celery' not in sys.modules\n"
            "def load():\n"
            "    for name in ['brokers_app.tasks', 'consumers_app.tasks', 'analytics.tasks', 'console.tasks']:\n"
            "        importlib.import_module(name)\n"
            "t = threading.Thread(target=load)\nt.start()\nt.join()\n"
            "def use():\n"
            "    from celery import current_app\n    from console.celery import app\n"
            "    from brokers_app.tasks import run_reassignment\n    from analytics.tasks import run_analytics\n"
            "    print('APP', current_app.main, run_reassignment.app is app, run_analytics.app is app,"
            " current_app.conf.broker_url.startswith('redis://'))\n"
            "t = threading.Thread(target=use)\nt.start()\nt.join()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "APP console True True True" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
