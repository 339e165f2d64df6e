"""The benchmarks create their own PostgreSQL database when it is missing (a fresh
machine has no ``uberllm_bench``: migrating into it was a connection traceback)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from django.db import connection

from lab.benchmark.database import admin_params, ensure_database


def _admin(config: dict) -> psycopg.Connection:
    return psycopg.connect(**admin_params(config), autocommit=True)


def _exists(config: dict, name: str) -> bool:
    with _admin(config) as admin:
        return bool(
            admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        )


def test_a_missing_postgresql_database_is_created_once() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    config = dict(connection.settings_dict, NAME=f"uberllm_bench_{uuid.uuid4().hex[:8]}")
    assert not _exists(config, config["NAME"])
    try:
        assert ensure_database(config) is True
        assert _exists(config, config["NAME"])
        assert ensure_database(config) is False  # there already: left as it is
    finally:
        with _admin(config) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{config["NAME"]}"')


def test_sqlite_needs_nothing() -> None:
    config = {"ENGINE": "django.db.backends.sqlite3", "NAME": "/nonexistent/dir/x.sqlite3"}
    assert ensure_database(config) is False
