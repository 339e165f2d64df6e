"""/healthz (liveness, no I/O) and /readyz (database, Redis, migrations, catalog)."""

from __future__ import annotations

import httpx
from django.conf import settings

from ..support import SubprocessGateway, free_port


def test_liveness_answers(gateway):
    response = httpx.get(f"{gateway.base_url}/healthz")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_ready_with_every_check_detailed(gateway):
    response = httpx.get(f"{gateway.base_url}/readyz")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True
    assert set(body["checks"]) == {"database", "redis", "events", "migrations", "catalog"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["catalog"]["detail"] == "1 models, 3 enabled endpoints"


def test_not_ready_when_redis_is_unreachable(gateway):
    configured = settings.REDIS_URL
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/13"
    try:
        response = httpx.get(f"{gateway.base_url}/readyz")
    finally:
        settings.REDIS_URL = configured
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["redis"]["ok"] is False
    assert "ConnectionError" in checks["redis"]["detail"]
    assert checks["database"]["ok"] is True


def _readyz_of_a_gateway_on(database_url: str) -> httpx.Response:
    gateway = SubprocessGateway(env={"DATABASE_URL": database_url, "REDIS_URL": ""}).start()
    try:
        return httpx.get(f"http://127.0.0.1:{gateway.port}/readyz", timeout=30)
    finally:
        gateway.stop()


def test_not_ready_on_an_unmigrated_database(transactional_db, tmp_path):
    response = _readyz_of_a_gateway_on(f"sqlite:///{tmp_path / 'empty.sqlite3'}")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] is True
    assert checks["migrations"]["ok"] is False
    assert "unapplied" in checks["migrations"]["detail"]


def test_not_ready_when_the_database_is_unreachable(transactional_db):
    response = _readyz_of_a_gateway_on(f"postgres://postgres@127.0.0.1:{free_port()}/nothing")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] is False
    assert checks["migrations"]["detail"] == "skipped: database unreachable"
    # It started: SubprocessGateway waited for /healthz 200, which needs no database.
