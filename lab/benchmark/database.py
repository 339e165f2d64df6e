"""The benchmarks' own PostgreSQL database, created when it does not exist yet.

``bench_overhead`` and ``loadtest`` are pointed at a database of their own
(``DATABASE_URL=postgres://.../uberllm_bench``); on a fresh machine that database is
not there, and migrating into it failed with a connection traceback. The benchmark
creates it instead (as the test runner creates its test database). Never used by the
gateway itself: a production database is the operator's to create.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def admin_params(config: dict[str, Any]) -> dict[str, Any]:
    """psycopg connection parameters for the server's ``postgres`` database."""
    params = {
        "dbname": "postgres",
        "host": config.get("HOST") or None,
        "port": config.get("PORT") or None,
        "user": config.get("USER") or None,
        "password": config.get("PASSWORD") or None,
    }
    return {key: value for key, value in params.items() if value is not None}


def ensure_database(config: dict[str, Any]) -> bool:
    """Create the PostgreSQL database of ``config`` (a Django ``DATABASES`` entry) if it
    does not exist; returns whether it was created. Other engines: nothing to do (SQLite
    creates its file on first use)."""
    if "postgresql" not in config.get("ENGINE", ""):
        return False
    import psycopg
    from psycopg import sql

    name = config["NAME"]
    with psycopg.connect(**admin_params(config), autocommit=True) as connection:
        found = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if found.fetchone() is not None:
            return False
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return True


def fresh_sqlite_file(config: dict[str, Any], base: Path, name: str) -> Path | None:
    """With SQLite (``config``, a Django ``DATABASES`` entry): an empty database file
    ``var/<name>/<name>.sqlite3`` under ``base``, never the development database. Other
    engines: None (the benchmark uses the database ``DATABASE_URL`` selects)."""
    if not config["ENGINE"].endswith("sqlite3"):
        return None
    path = base / "var" / name / f"{name}.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path
