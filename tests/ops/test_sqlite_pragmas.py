"""The embedded database's connection settings (uberllm/settings.py)."""

import pytest
from django.db import connection


@pytest.mark.django_db
def test_sqlite_keeps_temporary_tables_in_memory():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only (the embedded default)")
    with connection.cursor() as cursor:
        # 2 = MEMORY: no temporary file per write batch (docs/benchmarks.md, round 7)
        assert cursor.execute("PRAGMA temp_store").fetchone()[0] == 2
        assert cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
