"""A thousand open pages (issue 54): one web process's live sockets under a reconnect storm and live traffic.

`TEST_REDIS_PORT=6443 .venv/bin/python -m bench.sockets_load --pages 1000 --seconds 60` runs
`bench.simulate` (the watcher on a simulated cluster "sim", its own Redis and the test database) in
a child process, starts the web process as production does (Daphne on console.asgi, settings
bench.sockets_settings: the test suite's plus "sim"), logs `--users` viewers in over HTTP, then opens
`--pages` live pages' websockets (their session cookies, an Origin as a browser sends, the views of
`--views` in turn) within `--open-within` seconds, as the pages of a restarted web process come
back at once. It keeps them open for `--seconds` while the watcher broadcasts every cycle, and
prints one JSON line:

- connected / refused (by reason: HTTP status of the handshake, close code), and the time from a
  page's start to its socket's open (p50 / p99 / max);
- push age per (page, broadcast) in the window: `status_age` from the broadcast's sending
  (`sent_at`) to the page receiving its status, `page_age` to the first fragment drawn from its
  version or a later one (pages with fragments); p50 / p99 / max; `missed`: broadcasts of the
  window a page did not get;
- the web process's CPU over the window (CPU-seconds per wall second: 1.0 is one core).

The clients run in this process (one event loop), the web process, watcher and Redis beside it on
the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import redis
import requests

from bench.machine import reference_seconds
from bench.web_reads import quantile
from tests.support import PASSWORD, REDIS_PORT, ROOT, TEST_VAR, free_port, stack_env, wait_for

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # (utime, stime)


def make_users(count: int) -> list[str]:
    """`count` viewers with the suite's password (the child's migrated database; retried until it is)."""
    from django.contrib.auth.models import Group, User
    from django.db import OperationalError, ProgrammingError

    def made() -> list[str]:
        try:
            group = Group.objects.get(name="viewer")
        except (OperationalError, ProgrammingError, Group.DoesNotExist):
            return []
        names = []
        for i in range(count):
            user, _ = User.objects.get_or_create(username=f"load-{i}")
            user.set_password(PASSWORD)
            user.save()
            user.groups.set([group])
            names.append(user.username)
        return names

    return list(wait_for(made, 300, interval=1, what="the test database (migrated by the simulator)"))


def login(base_url: str, username: str) -> str:
    """A logged-in session's cookie header."""
    s = requests.Session()
    page = s.get(base_url + "/login/", timeout=30).text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token, "no CSRF token on the login page"
    r = s.post(base_url + "/login/", data={"csrfmiddlewaretoken": token.group(1), "username": username, "password": PASSWORD},
               headers={"Referer": base_url + "/login/"}, timeout=30, allow_redirects=False)
    assert r.status_code == 302, (username, r.status_code)
    return "; ".join(f"{c.name}={c.value}" for c in s.cookies)


class Page:
    """One open page's socket and what it received."""

    def __init__(self, view: str, cookie: str) -> None:
        self.view = view
        self.cookie = cookie
        self.opened_after: float | None = None
        self.refused: str | None = None
        self.statuses: list[tuple[int, float, float]] = []  # (version, arrived, sent_at)
        self.fragments: list[tuple[int, float]] = []  # (version drawn, arrived)
        self.ws: Any = None

    async def run(self, url: str, origin: str, delay: float) -> None:
        import websockets

        await asyncio.sleep(delay)
        started = time.monotonic()
        try:
            async with websockets.connect(url, additional_headers={"Cookie": self.cookie}, origin=origin,  # type: ignore[arg-type]
                                          open_timeout=120, max_size=None, ping_interval=None) as ws:
                self.opened_after = time.monotonic() - started
                self.ws = ws
                async for text in ws:  # (until the run's end closes it)
                    self.note(text, time.time())
        except websockets.InvalidStatus as exc:
            self.refused = f"HTTP {exc.response.status_code}"
        except websockets.ConnectionClosed as exc:
            self.refused = f"closed {exc.rcvd.code if exc.rcvd else None}"
        except (OSError, TimeoutError) as exc:
            self.refused = type(exc).__name__

    def note(self, text: str | bytes, now: float) -> None:
        if isinstance(text, bytes):
            return
        if text.startswith('{"type": "fragment"'):  # (large: only its version, at the end, is read)
            version = text[text.rfind('"version": ') + 11:-1]
            if version != "null":
                self.fragments.append((int(version), now))
            return
        message = json.loads(text)
        if message.get("type") == "status" and message.get("sent_at"):
            self.statuses.append((message["version"], now, message["sent_at"]))
        elif message.get("type") in ("notice", "error"):
            self.refused = self.refused or f"notice: {message.get('message')}"


async def open_pages(base_url: str, cookies: list[str], views: list[str], pages: int, within: float, seconds: float,
                     web_pid: int) -> dict[str, Any]:
    origin = base_url
    ws_base = base_url.replace("http://", "ws://") + "/ws/clusters/sim/live/?view="
    opened = [Page(views[i % len(views)], cookies[i % len(cookies)]) for i in range(pages)]
    tasks = [asyncio.ensure_future(p.run(ws_base + p.view, origin, within * i / pages)) for i, p in enumerate(opened)]
    # Every page opened (or refused), then a few seconds for the first redraws, then the window measured.
    open_deadline = time.monotonic() + within + 60
    while time.monotonic() < open_deadline and any(p.opened_after is None and p.refused is None for p in opened):
        await asyncio.sleep(0.1)
    await asyncio.sleep(5)
    window_start, cpu_start, own_start = time.time(), cpu_seconds(web_pid), time.process_time()
    await asyncio.sleep(seconds)
    window_end, cpu_end, own_end = time.time(), cpu_seconds(web_pid), time.process_time()
    await asyncio.gather(*(p.ws.close() for p in opened if p.ws is not None), return_exceptions=True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    result = figures(opened, window_start, window_end, (cpu_end - cpu_start) / (window_end - window_start))
    result["clients_cpu_cores"] = round((own_end - own_start) / (window_end - window_start), 3)
    return result


def figures(pages: list[Page], start: float, end: float, web_cpu: float) -> dict[str, Any]:
    connected = [p for p in pages if p.opened_after is not None and p.refused is None]
    # The broadcasts of the window: those any page got (sent in it, and a second to spare at its end).
    sent = {v: s for p in connected for v, _, s in p.statuses if start <= s <= end - 1}
    status_age, page_age, missed = [], [], 0
    for p in connected:
        got = {v: arrived for v, arrived, _ in p.statuses}
        for version, sent_at in sent.items():
            if version not in got:
                missed += 1
                continue
            status_age.append(got[version] - sent_at)
            if p.view != "status":
                shown = next((at for v, at in p.fragments if v >= version and at >= sent_at), None)
                page_age.append((shown if shown is not None else end) - sent_at)
    return {
        "pages": len(pages), "connected": len(connected), "refused": len(pages) - len(connected),
        "refused_by_reason": dict(Counter(p.refused or "never opened" for p in pages if p not in connected)),
        "open_p50_seconds": quantile([p.opened_after for p in connected if p.opened_after is not None], 0.5),
        "open_p99_seconds": quantile([p.opened_after for p in connected if p.opened_after is not None], 0.99),
        "open_max_seconds": quantile([p.opened_after for p in connected if p.opened_after is not None], 1.0),
        "broadcasts_in_window": len(sent), "missed": missed,
        "status_age_p50_seconds": quantile(status_age, 0.5), "status_age_p99_seconds": quantile(status_age, 0.99),
        "status_age_max_seconds": quantile(status_age, 1.0),
        "page_age_p50_seconds": quantile(page_age, 0.5), "page_age_p99_seconds": quantile(page_age, 0.99),
        "page_age_max_seconds": quantile(page_age, 1.0),
        "web_cpu_cores": round(web_cpu, 3), "window_seconds": round(end - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--users", type=int, default=25, help="viewers the pages belong to (each under the per-user limit)")
    parser.add_argument("--views", default="overview,topics,groups,status", help="live views the pages show, in turn")
    parser.add_argument("--open-within", type=float, default=1.0, help="seconds over which the pages open")
    parser.add_argument("--seconds", type=float, default=60, help="seconds measured while they are open")
    parser.add_argument("--partitions", type=int, default=30_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--change-rate", type=float, default=0.01)
    parser.add_argument("--handshake-timeout", type=int, default=5,
                        help="Daphne's --websocket_connect_timeout: seconds a handshake may take (Daphne's default 5)")
    args = parser.parse_args()
    reference = reference_seconds()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.simulate", "--partitions", str(args.partitions), "--groups", str(args.groups),
         "--change-rate", str(args.change_rate), "--seconds", str(args.seconds + 900)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    web: subprocess.Popen[bytes] | None = None
    try:
        wait_for(lambda: redis.Redis(port=REDIS_PORT).ping(), 60, what="the simulator's Redis")
        from bench.run import setup_django

        setup_django()
        users = make_users(args.users)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        env = stack_env()
        env["DJANGO_SETTINGS_MODULE"] = "bench.sockets_settings"
        (TEST_VAR / "logs").mkdir(parents=True, exist_ok=True)
        with open(TEST_VAR / "logs" / "sockets_load_web.log", "wb") as log:
            web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                    "--websocket_connect_timeout", str(args.handshake_timeout), "console.asgi:application"],
                                   cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: requests.get(base_url + "/healthz", timeout=5).json()["clusters"]["sim"]["reachable"], 300,
                 interval=1, what="the web process to see the simulated cluster")
        cookies = [login(base_url, name) for name in users]
        result = asyncio.run(open_pages(base_url, cookies, [v for v in args.views.split(",") if v], args.pages,
                                        args.open_within, args.seconds, web.pid))
    finally:
        if web is not None:
            web.terminate()
            web.wait(30)
        child.send_signal(signal.SIGINT)  # (its Redis is stopped on the way out)
        try:
            child.wait(60)
        except subprocess.TimeoutExpired:
            child.kill()
    result.update(machine_reference_seconds=reference, handshake_timeout=args.handshake_timeout, partitions=args.partitions, groups=args.groups, users=args.users,
                  views=args.views)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
