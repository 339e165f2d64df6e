"""Structured logs: one JSON object per line (python-json-logger) or plain text, chosen
by ``LOG_FORMAT`` (``json`` | ``text``), with the generation id of the request being
served on every record logged while it is served.

The id travels in a context variable: ``bind_generation_id`` at the start of a request
(the chat view, once it has minted the id) makes every log call in that task, and in the
threads ``sync_to_async`` starts from it, carry the id. Background tasks started with a
fresh context (``common.aio.run_in_background``) must bind it again themselves.
"""

from __future__ import annotations

import contextvars
import logging
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

_generation_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "generation_id", default=None
)

JSON_FIELDS = ("asctime", "levelname", "name", "message", "generation_id")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(generation_id)s] %(message)s"


def bind_generation_id(generation_id: str | None) -> contextvars.Token:
    """Tag every log record of the current context with ``generation_id``; returns the
    token for ``unbind_generation_id`` (a finished request need not call it: its
    context ends with it)."""
    return _generation_id.set(generation_id)


def unbind_generation_id(token: contextvars.Token) -> None:
    _generation_id.reset(token)


def current_generation_id() -> str | None:
    return _generation_id.get()


class GenerationIdFilter(logging.Filter):
    """Adds ``record.generation_id`` (``"-"`` outside a request) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "generation_id", None) is None:
            record.generation_id = _generation_id.get() or "-"
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object a line: time (ISO 8601, UTC), level, logger, message,
    generation_id, any ``extra=`` fields and the exception text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault(
            "rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"}
        )
        kwargs.setdefault("json_ensure_ascii", False)
        super().__init__(list(JSON_FIELDS), *args, **kwargs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """The ``LOGGING`` setting: every record, Django's, uvicorn's and Celery's included,
    through one console handler in the chosen format."""
    if log_format not in ("json", "text"):
        raise ValueError(f"LOG_FORMAT must be json or text, not {log_format!r}")
    formatter = (
        {"()": "common.logs.JsonFormatter"} if log_format == "json" else {"format": TEXT_FORMAT}
    )
    console = {
        "class": "logging.StreamHandler",
        "formatter": "default",
        "filters": ["generation_id"],
    }
    uvicorn = {"handlers": ["console"], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"generation_id": {"()": "common.logs.GenerationIdFilter"}},
        "formatters": {"default": formatter},
        "handlers": {"console": console},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "uvicorn": {**uvicorn, "level": level},
            "uvicorn.error": {"propagate": True},
            "uvicorn.access": {**uvicorn, "level": level},
        },
    }
