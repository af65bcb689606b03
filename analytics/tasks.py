"""Celery tasks of analytics: Spark runs on their own queue ("analytics"), one at a time, in a worker
that keeps its Spark session warm between runs; the report schedule, checked by beat."""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.utils import timezone

import console.celery  # noqa: F401  (the app every shared_task here is sent through: console/__init__.py)
from analytics import services
from analytics.kafka_security import SecurityOptionsError, masked, secrets_of, spark_options
from analytics.models import AnalyticsRun
from console import gateway
from console.gateway.errors import GatewayError, NotFound

log = logging.getLogger(__name__)
_spark: Any = None


class NoSamples(Exception):
    pass


def spark_session() -> Any:
    """The worker's session: started by its first run (a few seconds), reused by the next."""
    global _spark
    if _spark is None or _spark.sparkContext._jsc is None:
        from analytics.session import spark_session as start

        _spark = start(settings.SPARK_MASTER, settings.SPARK_CONF, driver_memory=settings.SPARK_DRIVER_MEMORY,
                       shuffle_partitions=settings.SPARK_SHUFFLE_PARTITIONS, jobs_dir=spark_jobs_dir())
    return _spark


def spark_jobs_dir() -> Path:
    """Where the worker keeps the jobs' archive it ships to Spark: a private directory in var/."""
    return Path(settings.VAR_DIR) / "spark-jobs"


def _stage(run: AnalyticsRun, stage: str, **fields: Any) -> None:
    run.stage = stage
    for k, v in fields.items():
        setattr(run, k, v)
    run.save()
    notify(run)


def notify(run: AnalyticsRun) -> None:
    from console.realtime import cluster_group, group_send

    try:
        group_send(cluster_group(run.cluster), {"type": "analytics.progress", "run": run.id})
    except Exception:  # noqa: BLE001 - the page shows the state on its next load
        log.debug("could not push analytics progress", exc_info=True)


def spark_reason(exc: BaseException) -> str:
    """Spark's reason in a sentence: the JVM's root cause when there is one, else the first line
    that says something, without the stack."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            root = java
            while root.getCause() is not None:
                root = root.getCause()
            name, _, message = str(root.toString()).partition(": ")
            return f"Spark failed: {name.rsplit('.', 1)[-1]}: {message.strip()[:400]}".rstrip(": ")
        except Exception:  # noqa: BLE001 - the JVM may be gone: fall back to the Python text
            pass
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("at ", "JVM stacktrace", "---"))]
    first = lines[0] if lines else type(exc).__name__
    return f"Spark failed: {first[:400]}"


@shared_task(ignore_result=True, acks_late=False)
def run_analytics(run_id: int) -> str:
    from analytics.jobs.pipeline import run as pipeline_run

    run = AnalyticsRun.objects.filter(id=run_id).first()
    if run is None or run.state != AnalyticsRun.QUEUED:
        return "nothing to do"
    started = time.monotonic()
    _stage(run, "starting Spark" if _spark is None else "reading samples", state=AnalyticsRun.RUNNING, started_at=timezone.now())
    limit = settings.ANALYTICS_RUN_TIMEOUT
    timed_out = threading.Event()

    def cancel() -> None:  # a run that takes too long is stopped, and says so
        timed_out.set()
        if _spark is not None:
            try:
                _spark.sparkContext.cancelAllJobs()
            except Exception:  # noqa: BLE001 - the session may be gone already
                log.warning("could not cancel Spark's jobs", exc_info=True)

    timer = threading.Timer(limit, cancel)
    timer.daemon = True
    timer.start()
    try:
        spark = spark_session()
        if timed_out.is_set():
            raise TimeoutError()
        _stage(run, "reading samples")
        config = gateway.cluster_config(run.cluster)
        try:
            gateway.for_cluster(run.cluster).topic_metadata(settings.ANALYTICS_SAMPLES_TOPIC)
        except NotFound:
            raise NoSamples(f"There are no samples to read yet: topic '{settings.ANALYTICS_SAMPLES_TOPIC}' does not exist "
                            f"on cluster '{run.cluster}' (the watcher makes it when it first samples the cluster).") from None
        directory = services.results_dir(run)
        _stage(run, "computing tables")
        # The cluster's own security settings: without them every secured cluster refuses the read.
        with spark_options(config) as options:
            summary_path = pipeline_run(spark, config.bootstrap_servers, settings.ANALYTICS_SAMPLES_TOPIC, directory,
                                        run.window_start_ms, run.window_end_ms, options=options)
        run.summary = json.loads(summary_path.read_text())
        if run.kind == "report":
            _stage(run, "writing the report")
            (directory / "report.html").write_text(services.report_html(run))
            (directory / "report.csv").write_text(services.report_csv(run))
            if run.schedule and run.schedule.email_to.strip():
                run.emailed_to = send_report(run)
        _stage(run, "done", state=AnalyticsRun.DONE, finished_at=timezone.now(), seconds=time.monotonic() - started)
        return "done"
    except Exception as exc:  # noqa: BLE001 - every failure is shown on the run, in a sentence
        secrets = _secrets(run.cluster)
        log.warning("analytics run %s failed: %s", run_id, masked("".join(traceback.format_exception(exc)), secrets))
        if timed_out.is_set():
            reason = f"Spark did not finish within {limit:g} s (ANALYTICS_RUN_TIMEOUT); its jobs were cancelled."
        else:
            reason = str(exc) if isinstance(exc, NoSamples | GatewayError | SecurityOptionsError) else spark_reason(exc)
        _stage(run, "failed", state=AnalyticsRun.FAILED, error=masked(reason, secrets), finished_at=timezone.now(),
               seconds=time.monotonic() - started)
        return "failed"
    finally:
        timer.cancel()


def _secrets(cluster: str) -> list[str]:
    """The passwords a failed run's text must not show (none for a cluster no longer configured)."""
    try:
        return secrets_of(gateway.cluster_config(cluster))
    except GatewayError:
        return []


def send_report(run: AnalyticsRun) -> str:
    """The report's HTML summary by e-mail with its CSV attached (Django's mail settings)."""
    from django.template.loader import render_to_string

    assert run.schedule is not None
    to = [a.strip() for a in run.schedule.email_to.split(",") if a.strip()]
    directory = services.results_dir(run)
    html = render_to_string("analytics/report_mail.html", {"run": run, "summary": run.summary})
    mail = EmailMultiAlternatives(
        subject=f"Kafka lag report ({run.schedule.name}) for cluster {run.cluster}",
        body=f"Lag report {run.id} for cluster {run.cluster}: {len(run.summary.get('worst_groups', []))} groups listed. "
             "The CSV is attached; the HTML part has the summary.",
        from_email=settings.DEFAULT_FROM_EMAIL, to=to)
    mail.attach_alternative(html, "text/html")
    mail.attach(f"lag-report-{run.cluster}-{run.id}.csv", (directory / "report.csv").read_text(), "text/csv")
    mail.send()
    return ", ".join(to)


@shared_task(ignore_result=True)
def fail_lost_runs() -> list[int]:
    """Beat, every minute: runs whose queue message was lost (analytics/queue.py) fail with that reason."""
    from analytics import queue

    failed = queue.fail_lost_runs()
    for run in AnalyticsRun.objects.filter(id__in=failed):
        log.warning("analytics run %s failed: its queue message was lost", run.id)
        notify(run)
    return failed


@shared_task(ignore_result=True)
def due_reports() -> list[int]:
    """Beat, every 30 s: queue a report for each enabled schedule whose time has come."""
    queued = []
    now = timezone.now()
    # A run no analytics worker took (none running, or it died) ends with the reason, not queued forever.
    stale = now - timedelta(seconds=settings.ANALYTICS_RUN_TIMEOUT)
    AnalyticsRun.objects.filter(state=AnalyticsRun.QUEUED, created_at__lt=stale).update(
        state=AnalyticsRun.FAILED, stage="failed", finished_at=now,
        error="No analytics worker took this run (is the 'analytics' Celery worker running?).")
    AnalyticsRun.objects.filter(state=AnalyticsRun.RUNNING, started_at__lt=stale - timedelta(minutes=5)).update(
        state=AnalyticsRun.FAILED, stage="failed", finished_at=now, error="The analytics worker stopped during this run.")
    for config in gateway.cluster_configs():
        for schedule in services.ensure_schedules(config.name):
            if not schedule.enabled:
                continue
            if schedule.last_run_at and schedule.last_run_at + timedelta(minutes=schedule.every_minutes) > now:
                continue
            schedule.last_run_at = now
            schedule.save(update_fields=["last_run_at"])
            end_ms = int(now.timestamp() * 1000)
            start_ms = max(end_ms - schedule.window_minutes * 60_000,
                           end_ms - int(settings.ANALYTICS_RETENTION_HOURS * 3600 * 1000) + 60_000)
            run = services.request_run(config.name, None, "report", start_ms, end_ms, schedule=schedule)
            queued.append(run.id)
    return queued
