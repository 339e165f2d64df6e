"""The Celery application. Tasks live in each app's ``tasks.py`` and stay thin."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uberllm.settings")

app = Celery("uberllm")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task runs, failures and durations as Prometheus metrics (common.metrics).
from common.metrics import connect_celery_signals  # noqa: E402

connect_celery_signals()
