"""The whole way at scale (issue 11): from a change in the simulated cluster to a real browser's page.

`TEST_REDIS_PORT=6395 .venv/bin/python -m bench.browser_push --seconds 100 --views topics,groups,overview`
runs `bench.simulate` (the watcher on a simulated cluster of 300,000 partitions and 50,000 groups, 1%
of the partitions changing a second) in a child process, then a web process as production runs it
(daphne, `console.asgi`, the same Redis and database, the simulated cluster configured as "sim"),
then Chromium (Debian's, headless), logged in as a viewer, with one tab per view
(`/clusters/sim/topics/` and so on), each page's own script keeping its live socket. A script added
to each page before its own records, with the system clock (the same on this one host as the
watcher's): each status the socket receives (its version, and when the watcher sent it), and each
fragment the page's script put into the page (the version it was drawn from, when the DOM took it,
and when the next frame had been painted). Nothing else is changed in the page.

For each view, as `bench.web_reads` does for its in-process sockets: broadcast -> page (the first
fragment drawn from the broadcast's version or a later one, painted), cycle start -> page, and, adding
the child's push of each leader move in the model (`--push-by-version`), `change_to_page_*` (p50,
p90, p99, max) and `changes_over_2s`: from a change in the cluster to a painted page. Ends by printing
one JSON line, with the web process's and the browser's CPU (CPU-seconds per wall second over the
measured window) and the watcher's own figures.

Everything shares this machine's cores: the simulated cluster's model (a process of its own, the
stand-in for the brokers) and the browser too, which in production run on other hosts. `--nice 19`
gives the browser the CPU the others leave, as if elsewhere (not the model: the watcher waits for
its answers, as for a cluster's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from bench.machine import reference_seconds
from bench.web_reads import change_to_page, child_result, page_figures, scale_arguments, watcher_figures
from tests.support import CHROMIUM_ARGS, PASSWORD, REDIS_PORT, ROOT, TEST_VAR, free_port, stack_env, wait_for

# Before the page's own script: wrap WebSocket so that every socket's messages are seen first (a
# listener added in the constructor runs before the page's `onmessage`), and note when the page's
# script has put a fragment into the DOM (it sends "fragment:updated" right after) and when the next
# frame after that has been painted (a task queued from the frame's callback runs after its paint).
RECORDER = """
(() => {
  const Native = window.WebSocket;
  const seen = {statuses: [], drawn: [], visibility: []};
  window.__push = seen;
  let pending = null;
  function Recorded(url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type === "status" && msg.sent_at) seen.statuses.push([msg.version, Date.now() / 1000, msg.sent_at, msg.taken_at]);
      else if (msg.type === "fragment" && msg.version !== undefined && msg.version !== null) pending = msg.version;
    });
    return ws;
  }
  Recorded.prototype = Native.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Recorded[k] = Native[k];
  window.WebSocket = Recorded;
  document.addEventListener("fragment:updated", () => {
    if (pending === null) return;
    const version = pending, applied = Date.now() / 1000;
    pending = null;
    requestAnimationFrame(() => setTimeout(() => seen.drawn.push([version, applied, Date.now() / 1000]), 0));
  });
  document.addEventListener("visibilitychange", () => seen.visibility.push(document.visibilityState));
})();
"""

# Chromium slows the frames and timers of a page it takes to be in the background (another tab, a
# covered window): every view here is a page someone is looking at.
FOREGROUND = ["--disable-renderer-backgrounding", "--disable-background-timer-throttling",
              "--disable-backgrounding-occluded-windows"]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU-seconds of these processes and their children that were waited for."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / tick  # utime, stime, cutime, cstime
    return total


def renderer_seconds(session: Any) -> dict[str, float]:
    """A page's renderer main thread's busy seconds so far: all its tasks, script, style, layout."""
    metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
    return {"task": metrics.get("TaskDuration", 0.0), "script": metrics.get("ScriptDuration", 0.0),
            "style": metrics.get("RecalcStyleDuration", 0.0), "layout": metrics.get("LayoutDuration", 0.0)}


def chromium_pids() -> list[int]:
    """This process's descendants that are Chromium's (the browser, its renderers, GPU and utility processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            if "chrom" in Path(f"/proc/{pid}/comm").read_text():
                found.append(pid)
        except OSError:
            continue
    return found


def main() -> None:
    parser = scale_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--warmup", type=float, default=75, help="seconds before the pages open (the watcher's warm-up)")
    parser.add_argument("--views", default="topics,groups,overview",
                        help="pages to open, one tab each (comma-separated: overview, topics, groups, layout, at-risk)")
    parser.add_argument("--nice", type=int, default=0,
                        help="niceness of the browser (elsewhere in production: with 19 it takes the CPU the console's"
                             " processes and the simulated cluster leave)")
    args = parser.parse_args()
    paths = {"overview": "", "topics": "topics/", "groups": "groups/", "layout": "layout/", "at-risk": "at-risk/"}
    views = [v for v in args.views.split(",") if v]
    unknown = [v for v in views if v not in paths]
    if unknown:
        parser.error(f"unknown views {unknown}: choose from {sorted(paths)}")

    reference = reference_seconds()
    clusters = Path(tempfile.mkstemp(suffix=".json")[1])
    clusters.write_text(json.dumps([{"name": "sim", "bootstrap_servers": "127.0.0.1:9"}]))
    # The web process as production configures it (tests/settings.py would drop KAFKA_CLUSTERS_FILE), on
    # the test stack's Redis and database (the child's: tests/settings.py leaves the database to
    # CONSOLE_VAR_DIR too).
    test = stack_env()
    env = {k: v for k, v in test.items() if not k.startswith("DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="console.settings", KAFKA_CLUSTERS_FILE=str(clusters),
               REDIS_URL=f"redis://127.0.0.1:{REDIS_PORT}/0",
               CONSOLE_SECRET_KEY="bench-only-secret-key-that-is-long-enough-for-django-0123456789")
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    logs = TEST_VAR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.simulate", "--partitions", str(args.partitions), "--groups", str(args.groups),
         "--change-rate", str(args.change_rate), "--seconds", str(args.seconds + args.warmup + 30), "--push-by-version"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ.copy())
    web: subprocess.Popen[bytes] | None = None
    try:
        time.sleep(args.warmup)  # (the child has migrated the database and written its first versions)
        if child.poll() is not None:
            raise SystemExit("bench.simulate ended during the warm-up")
        subprocess.run([sys.executable, "manage.py", "ensureuser", "viewer", "--role", "viewer", "--password", PASSWORD],
                       cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
        with open(logs / "browser_push_web.log", "wb") as log:
            web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "console.asgi:application"],
                                   cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: requests.get(base_url + "/login/", timeout=5).status_code == 200, 60, what="the web process")
        pages = in_browser(base_url, views, paths, args.seconds, web.pid, args.nice)
        out, _ = child.communicate(timeout=args.seconds + args.warmup + 600)
    finally:
        if child.poll() is None:
            child.kill()
        if web is not None:
            web.terminate()
            web.wait(15)
        clusters.unlink(missing_ok=True)
    pushes = child_result(out).get("push_by_version", {})
    for figures in pages["views"].values():
        figures.update(change_to_page(pushes, figures.pop("page_after")))
    print(json.dumps({**pages, "machine_reference_seconds": reference, "watcher": watcher_figures(out)}), flush=True)


def in_browser(base_url: str, views: list[str], paths: dict[str, str], seconds: float, web_pid: int,
               nice: int = 0) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # Each view in a window of its own, none throttled as a hidden tab would be: each is the page an
        # operator has in front of them.
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                    args=[*CHROMIUM_ARGS, *FOREGROUND])
        tabs = {}
        for view in views:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(RECORDER)
            page = context.new_page()
            page.goto(base_url + "/login/")
            page.fill("input[name=username]", "viewer")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_load_state()
            response = page.goto(f"{base_url}/clusters/sim/{paths[view]}", timeout=120_000)
            if response is None or response.status != 200:
                raise SystemExit(f"the {view} page answered {response.status if response else 'nothing'}")
            tabs[view] = page
        browsers = chromium_pids()
        for pid in browsers if nice else ():
            os.setpriority(os.PRIO_PROCESS, pid, nice)
        cpu_from = (cpu_seconds([web_pid]), cpu_seconds(browsers), time.monotonic())
        cdp = {}
        for view, page in tabs.items():  # (the first records are of the pages' loading: the window starts now)
            page.evaluate("() => { window.__push.statuses.length = 0; window.__push.drawn.length = 0; }")
            cdp[view] = page.context.new_cdp_session(page)
            cdp[view].send("Performance.enable")
        renderer_from = {view: renderer_seconds(session) for view, session in cdp.items()}
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for page in tabs.values():
                page.wait_for_timeout(1000 / len(tabs))  # (Playwright's calls keep every tab's events moving)
        wall = time.monotonic() - cpu_from[2]
        cpu = {"web_cpu_fraction": round((cpu_seconds([web_pid]) - cpu_from[0]) / wall, 3),
               "browser_cpu_fraction": round((cpu_seconds(chromium_pids()) - cpu_from[1]) / wall, 3)}
        results: dict[str, Any] = {}
        for view, page in tabs.items():
            seen = page.evaluate("() => window.__push")
            drawn = [(int(v), float(painted)) for v, _applied, painted in seen["drawn"]]
            dom = [float(painted) - float(applied) for _v, applied, painted in seen["drawn"]]
            statuses = [(int(v), float(a), float(s), float(t)) for v, a, s, t in seen["statuses"]]
            spent = renderer_seconds(cdp[view])
            results[view] = {**page_figures(statuses, drawn), "visibility_changes": seen["visibility"],
                             # (the page's renderer main thread, per wall second: all its tasks, and of them
                             # script, style, layout; Chromium's Performance.getMetrics)
                             **{f"renderer_{k}_fraction": round((spent[k] - renderer_from[view][k]) / wall, 3) for k in spent},
                             "dom_to_paint_p50_seconds": sorted(dom)[len(dom) // 2] if dom else None,
                             "dom_to_paint_max_seconds": max(dom) if dom else None}
        browser.close()
    return {"views": results, **cpu}


if __name__ == "__main__":
    main()
