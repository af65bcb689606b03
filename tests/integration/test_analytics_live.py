"""Analytics end to end on the real cluster: the watcher's samples in Kafka, a Spark run over them
through the Kafka connector, its figures against Kafka's own tools, Run now in the browser, and a
scheduled report that appears by itself and arrives by e-mail at a mail server run here."""

from __future__ import annotations

import csv
import io
import re
import socket
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import OUTPUT, Stack, unique, wait_for
from tests.support import SMTP_PORT

pytestmark = [pytest.mark.cluster]

SAMPLES_TOPIC = "__kafka_console_samples"
RUNS = "/api/v1/clusters/local/analytics/runs/"


class MailServer:
    """Just enough SMTP to receive a message: every DATA block is kept in `messages`."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(5)
        self.messages: list[str] = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.session, args=(conn,), daemon=True).start()

    def session(self, conn: socket.socket) -> None:
        f = conn.makefile("rb")
        conn.sendall(b"220 test ESMTP\r\n")
        while True:
            line = f.readline()
            if not line:
                break
            cmd = line.decode(errors="replace").strip().upper()
            if cmd.startswith(("EHLO", "HELO")):
                conn.sendall(b"250 test\r\n")
            elif cmd.startswith("DATA"):
                conn.sendall(b"354 go on\r\n")
                data = []
                while (chunk := f.readline()) not in (b".\r\n", b""):
                    data.append(chunk.decode(errors="replace"))
                self.messages.append("".join(data))
                conn.sendall(b"250 queued\r\n")
            elif cmd.startswith("QUIT"):
                conn.sendall(b"221 bye\r\n")
                break
            else:
                conn.sendall(b"250 ok\r\n")
        conn.close()

    def close(self) -> None:
        self.sock.close()


def run_done(stack: Stack, run_id: int, timeout: float = 300) -> dict:
    def finished() -> dict | None:
        r = stack.get(f"{RUNS}{run_id}/").json()
        return r if r["state"] in ("done", "failed") else None

    result = wait_for(finished, timeout, interval=2, what=f"analytics run {run_id}")
    assert result["state"] == "done", result
    return result


def test_a_run_over_real_samples_agrees_with_kafkas_offsets(stack: Stack) -> None:
    topic, group = unique("an-topic"), unique("an-group")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 20, what="the topic in the console")
    # The watcher makes its sample topic when it first has something to write.
    wait_for(lambda: SAMPLES_TOPIC in stack.cluster.tool("kafka-topics", "--list").split(), 60,
             what="the watcher to create its sample topic")
    time.sleep(4)  # a few samples of the empty topic first
    start_ms = int(time.time() * 1000)
    time.sleep(2)
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(3000):
        producer.produce(topic, value=f"m{i}".encode(), partition=i % 3)
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got = 0
    while got < 2000:
        msg = consumer.poll(5)
        assert msg is not None, "no message to consume"
        got += 1
    consumer.commit(offsets=[TopicPartition(topic, p, 1000 if p < 2 else 0) for p in range(3)], asynchronous=False)
    consumer.close()
    time.sleep(6)  # samples after the last write and commit
    end_ms = int(time.time() * 1000)

    tool_ends = sum(int(x) for x in re.findall(rf"^{re.escape(topic)}:\d+:(\d+)$",
                                                stack.cluster.tool("kafka-get-offsets", "--topic", topic), re.M))
    described = stack.cluster.tool("kafka-consumer-groups", "--describe", "--group", group)
    tool_lag = sum(int(m) for m in re.findall(rf"^{re.escape(group)}\s+{re.escape(topic)}\s+\d+\s+\d+\s+\d+\s+(\d+)", described, re.M))
    assert tool_ends == 3000 and tool_lag == 1000, (tool_ends, tool_lag, described)

    r = stack.api("operator").post(stack.base_url + RUNS, json={"start_ms": start_ms, "end_ms": end_ms}, timeout=30)
    assert r.status_code == 202, r.text
    result = run_done(stack, r.json()["id"])
    assert result["seconds"] < 300

    history = stack.get(f"/api/v1/clusters/local/analytics/topics/{topic}/").json()
    written = sum(m or 0 for m in history["messages"])
    assert abs(written - tool_ends) <= 0.02 * tool_ends, (written, tool_ends)
    lag = stack.get(f"/api/v1/clusters/local/analytics/consumer-groups/{group}/").json()
    assert lag["lag"], "no lag history for the group"
    assert abs(lag["lag"][-1] - tool_lag) <= 0.02 * tool_lag, (lag["lag"][-1], tool_lag)


def some_traffic(stack: Stack) -> tuple[str, str]:
    """A topic with 300 messages and a group that committed 100 of them per partition, sampled."""
    topic, group = unique("an-chart"), unique("an-chart-group")
    stack.cluster.tool("kafka-topics", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    wait_for(lambda: stack.get(f"/api/v1/clusters/local/topics/{topic}/").status_code == 200, 20, what="the topic in the console")
    time.sleep(3)
    producer = Producer({"bootstrap.servers": stack.cluster.bootstrap, "acks": "all"})
    for i in range(300):
        producer.produce(topic, value=f"m{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": stack.cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, p, 100) for p in range(2)], asynchronous=False)
    consumer.close()
    time.sleep(5)  # samples after the writes and the commit
    return topic, group


def test_run_now_shows_progress_in_the_browser_and_the_charts_render(stack: Stack, logged_in_page: Any) -> None:
    topic, group = some_traffic(stack)
    page = logged_in_page
    page.goto(f"{stack.base_url}/clusters/local/analytics/")
    page.evaluate("window.__noReload = true")
    before = page.locator("#runs-table tr[data-run]").count()
    page.click("#run-now")
    page.wait_for_url("**/clusters/local/analytics/")
    page.evaluate("window.__noReload = true")
    newest = page.locator("#runs-table tr[data-run]").first
    run_id = int(newest.get_attribute("data-run") or 0)
    assert page.locator("#runs-table tr[data-run]").count() == before + 1
    page.wait_for_selector(f'#runs-table tr[data-run="{run_id}"][data-state="done"]', timeout=300_000)
    assert page.evaluate("window.__noReload") is True, "the page reloaded: progress must arrive live"
    page.reload()
    page.wait_for_selector("#throughput-chart .main-svg")
    page.wait_for_selector("#lag-chart .main-svg")
    page.screenshot(path=str(OUTPUT / "analytics.png"), full_page=True)
    tick = "getComputedStyle(document.querySelector('#throughput-chart .ytick text')).fill"
    assert page.evaluate(tick) == "rgb(29, 35, 48)", "dark labels on the light page"
    page.emulate_media(color_scheme="dark")
    # The system turning dark restyles the page, and the charts redraw their labels light.
    # (polled from here: the page's CSP allows no string evaluation, so no wait_for_function)
    wait_for(lambda: page.evaluate(tick) == "rgb(227, 231, 239)", 5, what="light chart labels on the dark page")
    page.screenshot(path=str(OUTPUT / "analytics-dark.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    # The topic and group pages draw their history from the latest run.
    for path, shot in ((f"/clusters/local/topics/{topic}/", "topic-history.png"),
                       (f"/clusters/local/groups/{group}/", "group-history.png")):
        page.goto(stack.base_url + path)
        page.wait_for_selector("#history-chart .main-svg", timeout=15_000)
        assert page.locator("#history-chart .scatterlayer .trace").count() >= 1, f"no series drawn on {path}"
        page.locator("#history").screenshot(path=str(OUTPUT / shot))


def test_a_scheduled_report_appears_by_itself_and_arrives_by_mail(stack: Stack, logged_in_page: Any) -> None:
    mail = MailServer(SMTP_PORT)
    try:
        before = {r["id"] for r in stack.get("/api/v1/reports/").json()["reports"]}
        r = stack.api("admin").patch(stack.base_url + "/api/v1/clusters/local/report-schedules/?name=hourly",
                                     json={"every_minutes": 1, "window_minutes": 10, "email_to": ["ops@example.com"]}, timeout=10)
        assert r.status_code == 200, r.text

        def new_report() -> dict | None:
            rows = [x for x in stack.get("/api/v1/reports/").json()["reports"] if x["id"] not in before and x["state"] == "done"]
            return rows[0] if rows else None

        report = wait_for(new_report, 400, interval=3, what="a scheduled report")
        assert report["schedule"] == "hourly" and report["emailed_to"] == "ops@example.com"
        detail = stack.get(f"/api/v1/reports/{report['id']}/").json()
        rows = list(csv.DictReader(io.StringIO(stack.get(detail["csv"]).text)))
        worst = [(r["name"], int(r["total_lag"])) for r in rows if r["section"] == "worst_groups"]
        assert worst == [(g["group_id"], g["total_lag"]) for g in detail["summary"]["worst_groups"]]
        page = logged_in_page
        page.goto(f"{stack.base_url}/clusters/local/reports/{report['id']}/")
        page.wait_for_selector("#throughput-chart .main-svg")
        shown = page.locator("#worst-groups tbody tr td:first-child").all_inner_texts()
        assert shown == [name for name, _ in worst] or (not worst and shown == ["No group samples in the window."])
        page.screenshot(path=str(OUTPUT / "lag-report.png"), full_page=True)
        wait_for(lambda: mail.messages, 30, what="the report by e-mail")
        message = mail.messages[0]
        assert "Kafka lag report (hourly) for cluster local" in message
        assert "text/html" in message and "text/csv" in message and f"lag-report-local-{report['id']}.csv" in message
    finally:
        stack.api("admin").patch(stack.base_url + "/api/v1/clusters/local/report-schedules/?name=hourly",
                                 json={"every_minutes": 60, "window_minutes": 60, "email_to": []}, timeout=10)
        mail.close()
