"""Shared fixtures: the emulator and the gateway run once per session; every test that
uses them gets a fresh catalog, tenant and namespaced shared store."""

from __future__ import annotations

import os

import pytest

from lab.emulator.server import EmulatorServer

from .support import (
    TEST_FLUSH_INTERVAL_S,
    TEST_MARKET,
    GatewayServer,
    catalog_for_tests,
    close_other_connections,
    make_tenant,
    reset_process_caches,
    wait_background_idle,
)


@pytest.fixture(scope="session")
def emulator_server():
    with EmulatorServer(TEST_MARKET) as server:
        yield server


@pytest.fixture(scope="session")
def gateway_server(django_db_setup, django_db_blocker):
    server = GatewayServer().start()
    yield server
    server.stop()
    with django_db_blocker.unblock():
        close_other_connections()


@pytest.fixture
def emulator(emulator_server, request):
    emulator_server.reset(profiles=True)
    reset_process_caches(request.node.nodeid)
    return emulator_server


@pytest.fixture
def market(emulator, transactional_db):
    """The test catalog on the emulator; returns {slug: Endpoint}."""
    from providers.models import Endpoint
    from providers.services import catalog_import

    catalog_import(data=catalog_for_tests(emulator.base_url))
    return {e.provider.slug: e for e in Endpoint.objects.select_related("provider")}


@pytest.fixture
def tenant(market):
    return make_tenant("Acme")


@pytest.fixture
def gateway(gateway_server, market):
    yield gateway_server
    # Ledger and learning writes run beside requests; let them land before the test's
    # database is flushed (else they race the flush).
    wait_background_idle()


@pytest.fixture
def client(gateway, tenant):
    """The official openai client pointed at the live gateway with the tenant's key."""
    from openai import OpenAI

    with OpenAI(base_url=gateway.api_url, api_key=tenant.key, max_retries=0) as openai_client:
        yield openai_client


def django_configured() -> bool:
    return bool(os.environ.get("DJANGO_SETTINGS_MODULE"))


@pytest.fixture(autouse=True, scope="session")
def _remove_sqlite_test_files():
    """Django drops the SQLite test database file but not its WAL companions."""
    yield
    if not django_configured():
        return
    from django.conf import settings

    name = settings.DATABASES["default"].get("TEST", {}).get("NAME") or ""
    for suffix in ("", "-wal", "-shm"):
        if name.endswith(".sqlite3") and os.path.exists(name + suffix):
            os.remove(name + suffix)


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hasher():
    """Tenants and members are created in most tests: PBKDF2's million rounds cost each
    one ~0.5 s on a slow core (a third of a CI run). Production keeps Django's default."""
    if not django_configured():
        yield
        return
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["tests.hashers.FastPBKDF2PasswordHasher"]):
        yield


@pytest.fixture(autouse=True, scope="session")
def _allow_loopback_upstreams():
    """The emulator runs on loopback; production keeps private upstreams forbidden."""
    if not django_configured():
        return  # the routing core's tests run without Django (-p no:django)
    from django.conf import settings

    settings.UBERLLM["ALLOW_PRIVATE_UPSTREAMS"] = True
    # Exploration (R2.6) sends 5% of requests to a random endpoint: tests that do not
    # test it want a deterministic choice.
    settings.UBERLLM["EXPLORATION_RATE"] = 0.0
    # Under load a process writes its ledger rows and speed samples at most every 0.2 /
    # 0.5 s (tests/ops/test_batch_writer.py tests that); tests wait for each write.
    from billing.ledger_writer import ledger_writer
    from routing.outbox import sample_writer

    for writer in (ledger_writer, sample_writer):
        writer.min_interval_s = TEST_FLUSH_INTERVAL_S
