"""Structured logs: JSON lines carrying the generation id bound for the request."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import subprocess
import sys

import orjson
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings

from common.logs import GenerationIdFilter, JsonFormatter, bind_generation_id, logging_config


@pytest.fixture
def json_log():
    """A logger writing JSON lines into a buffer; returns (logger, lines())."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(GenerationIdFilter())
    logger = logging.getLogger("tests.ops.json")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, lambda: [orjson.loads(line) for line in buffer.getvalue().splitlines()]
    logger.removeHandler(handler)


async def test_every_record_of_a_request_carries_its_generation_id(json_log):
    logger, lines = json_log

    async def request(generation_id: str) -> None:
        bind_generation_id(generation_id)
        logger.info("started")
        await sync_to_async(logger.info, thread_sensitive=False)("in a database thread")
        await asyncio.sleep(0)
        logger.warning("finished", extra={"status": "ok"})

    await asyncio.gather(request("gen-1"), request("gen-2"))
    logger.info("outside any request")
    records = lines()
    assert len(records) == 7
    by_id = {}
    for record in records:
        by_id.setdefault(record["generation_id"], []).append(record["message"])
    assert by_id["gen-1"] == ["started", "in a database thread", "finished"]
    assert by_id["gen-2"] == ["started", "in a database thread", "finished"]
    assert by_id["-"] == ["outside any request"]
    finished = next(r for r in records if r["message"] == "finished")
    assert finished["level"] == "WARNING"
    assert finished["logger"] == "tests.ops.json"
    assert finished["status"] == "ok"
    assert finished["time"].endswith("+00:00")


def test_exceptions_are_one_json_line(json_log):
    logger, lines = json_log
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("it failed")
    (record,) = lines()
    assert "ValueError: boom" in record["exc_info"]


def test_log_format_setting_selects_json_lines_for_the_whole_process():
    code = (
        "import django, logging; django.setup(); "
        "from common.logs import bind_generation_id; bind_generation_id('gen-9'); "
        "logging.getLogger('uberllm.test').warning('hello %s', 'world')"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "uberllm.settings",
        "LOG_FORMAT": "json",
        "UBERLLM_READ_DOT_ENV": "false",
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    record = orjson.loads(result.stderr.strip().splitlines()[-1])
    assert record["message"] == "hello world"
    assert record["generation_id"] == "gen-9"
    text = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "LOG_FORMAT": "text"},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "WARNING uberllm.test [gen-9] hello world" in text


def test_an_unknown_log_format_is_refused():
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        logging_config("xml", "INFO")
