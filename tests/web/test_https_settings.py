"""HTTPS behind a proxy: the settings come from the environment, are off by default, and do what they say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.contrib.auth.models import User
from django.test import Client

ROOT = Path(__file__).resolve().parent.parent.parent
NAMES = ["SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
         "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER", "SECURE_SSL_REDIRECT", "CONSOLE_SESSION_IDLE_SECONDS",
         "SESSION_COOKIE_AGE", "CONSOLE_API_TOKEN_TTL_HOURS", "CONSOLE_LOGIN_FAILURE_LIMIT", "AXES_COOLOFF_TIME"]


def _settings(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "DJANGO_SETTINGS_MODULE"))}
    clean.update(DJANGO_SETTINGS_MODULE="tests.settings", **env)
    code = ("import django, json; django.setup(); from django.conf import settings as s; "
            f"print(json.dumps({{n: str(getattr(s, n, None)) for n in {NAMES!r}}}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_https_settings_are_off_by_default_and_on_from_the_environment() -> None:
    default = _settings()
    assert (default["SESSION_COOKIE_SECURE"], default["CSRF_COOKIE_SECURE"], default["SECURE_HSTS_SECONDS"],
            default["SECURE_PROXY_SSL_HEADER"], default["SECURE_SSL_REDIRECT"]) == ("False", "False", "0", "None", "False")

    on = _settings(CONSOLE_SECURE_COOKIES="true", CONSOLE_HSTS_SECONDS="31536000", CONSOLE_HSTS_INCLUDE_SUBDOMAINS="1",
                   CONSOLE_HSTS_PRELOAD="yes", CONSOLE_BEHIND_PROXY="true", CONSOLE_SSL_REDIRECT="on",
                   CONSOLE_SESSION_IDLE_SECONDS="900", CONSOLE_SESSION_MAX_AGE_SECONDS="3600",
                   CONSOLE_API_TOKEN_TTL_HOURS="24", CONSOLE_LOGIN_FAILURE_LIMIT="5", CONSOLE_LOGIN_COOLOFF_SECONDS="60")
    assert on == {
        "SESSION_COOKIE_SECURE": "True", "CSRF_COOKIE_SECURE": "True", "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "True", "SECURE_HSTS_PRELOAD": "True",
        "SECURE_PROXY_SSL_HEADER": "('HTTP_X_FORWARDED_PROTO', 'https')", "SECURE_SSL_REDIRECT": "True",
        "CONSOLE_SESSION_IDLE_SECONDS": "900", "SESSION_COOKIE_AGE": "3600", "CONSOLE_API_TOKEN_TTL_HOURS": "24",
        "CONSOLE_LOGIN_FAILURE_LIMIT": "5", "AXES_COOLOFF_TIME": "0:01:00",
    }


def test_a_bad_value_stops_the_start_naming_the_variable() -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONSOLE_", "DJANGO_SETTINGS_MODULE"))}
    clean.update(DJANGO_SETTINGS_MODULE="tests.settings", CONSOLE_HSTS_SECONDS="a year")
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=clean,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "CONSOLE_HSTS_SECONDS must be a whole number" in done.stderr


def test_behind_a_tls_proxy_cookies_are_secure_and_hsts_is_sent(users: dict[str, User], settings: object) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")  # type: ignore[attr-defined]
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True  # type: ignore[attr-defined]
    settings.SECURE_HSTS_SECONDS = 600  # type: ignore[attr-defined]
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True  # type: ignore[attr-defined]
    settings.SECURE_SSL_REDIRECT = True  # type: ignore[attr-defined]

    plain = Client()
    assert plain.get("/login/")["Location"].startswith("https://")
    assert plain.get("/healthz").status_code != 301  # load balancers' checks stay on http

    proxied = Client(HTTP_X_FORWARDED_PROTO="https")
    page = proxied.get("/login/")
    assert page.status_code == 200
    assert page["Strict-Transport-Security"] == "max-age=600; includeSubDomains"
    login = proxied.post("/login/", {"username": "viewer", "password": "pw-viewer"})
    assert login.status_code == 302
    assert login.cookies["sessionid"]["secure"] is True
