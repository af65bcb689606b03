"""The Celery app: JSON only, configuration from Django settings (CELERY_*)."""

import os

from celery import Celery

from console.private import restrict_umask

restrict_umask()  # before anything is written (beat's schedule, a worker's files): its user's only
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
