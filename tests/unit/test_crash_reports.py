"""tests/support.crash_reports: how the test session finds a watcher child's crash in the stack's log."""

from __future__ import annotations

from tests.support import crash_reports

CRASH = (b"2026-11-26 17:00:13,153 INFO console.watcher.sampler: could not read log dir sizes of local\n"
         b"python: rdkafka_queue.h:1052: rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0' failed.\n"
         b"Fatal Python error: Aborted\n\nThread 0x00007f (most recent call first):\n  File \"loop.py\", line 3 in cycle\n"
         b"The watcher process ended (signal SIGABRT) after 840 s and was started again.\n")


def test_a_restart_is_reported_once_with_what_the_child_wrote_before_it() -> None:
    log = b"watcher started\n" * 100 + CRASH + b"watcher started\n"
    reports, read = crash_reports(log, 0)
    assert len(reports) == 1
    assert "Assertion `eonce->refcnt > 0' failed." in reports[0]
    assert "Fatal Python error: Aborted" in reports[0]
    assert reports[0].endswith("The watcher process ended (signal SIGABRT) after 840 s and was started again.")
    assert read == len(log)
    assert crash_reports(log, read) == ([], read)  # nothing new: nothing reported again
    later = log + b"some line\n" + CRASH
    again, read2 = crash_reports(later, read)
    assert len(again) == 1 and read2 == len(later)


def test_without_faulthandlers_header_the_report_keeps_the_context_lines_before_the_note() -> None:
    log = b"".join(b"line %d\n" % i for i in range(500)) + b"double free or corruption (out)\n" + CRASH.splitlines(True)[-1]
    (report,) = crash_reports(log, 0, context=5)[0]
    assert report.splitlines()[:2] == ["line 496", "line 497"] and "double free or corruption" in report
    assert len(report.splitlines()) == 6


def test_a_note_still_being_written_waits_for_its_end_of_line() -> None:
    log = b"watcher started\n" + CRASH[:-20]  # the supervisor's note cut off mid-line
    reports, read = crash_reports(log, 0)
    assert reports == [] and read == log.rfind(b"\n") + 1
    reports, _ = crash_reports(log + CRASH[-20:], read)
    assert len(reports) == 1


def test_a_log_without_a_restart_reports_nothing() -> None:
    log = b"watcher started\n2026-11-26 INFO console.watcher.runner: watching cluster local\n"
    assert crash_reports(log, 0) == ([], len(log))


def test_a_report_starts_just_before_faulthandlers_header_however_many_threads_it_lists() -> None:
    stacks = b"".join(b"Thread 0x%02x (most recent call first):\n  File \"x.py\", line 1 in f\n\n" % i for i in range(40))
    log = b"line\n" * 200 + b"python: rdkafka_queue.h:1052: assertion failed.\nFatal Python error: Aborted\n\n" + stacks + \
        b"The watcher process ended (signal SIGABRT) after 9 s and was started again.\n"
    (report,) = crash_reports(log, 0)[0]
    lines = report.splitlines()
    assert lines[:2] == ["line", "line"] and lines[3] == "Fatal Python error: Aborted"
    assert "rdkafka_queue.h:1052" in report and len(lines) == 4 + 1 + 40 * 3 + 1
