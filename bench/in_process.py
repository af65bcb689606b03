"""The test settings and a test database, for the benches that time the console's code in-process."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def django_with_test_databases(prefix: str) -> Iterator[None]:
    """Django set up on tests.settings with its databases made (and dropped at the end), its data
    in a new temporary directory unless TEST_VAR_DIR names one."""
    os.environ.setdefault("TEST_VAR_DIR", tempfile.mkdtemp(prefix=prefix))
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django

    django.setup()
    from django.test.runner import DiscoverRunner
    from django.test.utils import setup_test_environment

    setup_test_environment()
    runner = DiscoverRunner(verbosity=0)
    old = runner.setup_databases()
    try:
        yield
    finally:
        runner.teardown_databases(old)
