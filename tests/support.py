"""Test support: a live gateway (uvicorn in a thread), a test market on the emulator,
and helpers to seed tenants. Real parts only: real HTTP, real database, real SSE."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn
from django.conf import settings

TEST_MODEL = "test/model-a"
# Ledger and speed-sample flush interval of the test gateways (production: 0.2 / 0.5 s).
TEST_FLUSH_INTERVAL_S = 0.02

# A small market with tiny delays so tests run fast; tests slow providers down with
# emulator.control(...) where they need to.
TEST_MARKET = {
    "seed": 7,
    "time_scale": 1.0,
    "providers": {
        slug: {
            "models": [TEST_MODEL],
            "ttft_base_s": 0.005,
            "prefill_tokens_per_s": 5_000_000,
            "jitter": {"kind": "none"},
            "output_tokens_per_s": 5000,
            "default_output_tokens": 8,
            "cache_ttl_s": 300,
        }
        for slug in ("alpha", "bravo", "charlie")
    },
}
# Prices (USD per 1M): input, cache read, cache write, output. alpha is cheapest.
TEST_PRICES = {
    "alpha": ("0.10", "0.01", "0", "0.40"),
    "bravo": ("0.20", "0.02", "0", "0.60"),
    "charlie": ("0.30", "0.03", "0", "0.90"),
}


def catalog_for_tests(emulator_url: str) -> dict:
    endpoints = [
        {
            "provider": slug,
            "base_url": f"{emulator_url}/{slug}/v1",
            "credential_env": f"UBERLLM_PROVIDER_KEY_TEST_{slug.upper()}",
            "context_length": 200_000,
            "supported_parameters": ["max_tokens", "temperature", "tools"],
            "price_input": pi,
            "price_cache_read": pc,
            "price_cache_write": pw,
            "price_output": po,
        }
        for slug, (pi, pc, pw, po) in TEST_PRICES.items()
    ]
    return {
        "providers": [{"slug": slug, "name": slug.title()} for slug in TEST_PRICES],
        "models": [
            {
                "slug": TEST_MODEL,
                "name": "Test model A",
                "list_price_input": "0.50",
                "list_price_cache_read": "0.05",
                "list_price_output": "1.50",
                "endpoints": endpoints,
            }
        ],
    }


class GatewayServer:
    """The real ASGI application under uvicorn in a background thread, on a free port."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/v1"

    def start(self) -> GatewayServer:
        from uberllm.asgi import application

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        # Idle keep-alive connections live longer than any pause of a test: with uvicorn's
        # 5 s a client reusing one just as the server closes it gets a reset (seen once, in
        # a probe test whose probe cycle paused the client ~5 s; the SDK clients here do
        # not retry).
        config = uvicorn.Config(
            application, log_level="warning", lifespan="off", timeout_keep_alive=120
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name="gateway"
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("gateway did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(5)


def wait_background_idle(timeout: float = 10.0) -> None:
    """Wait until the in-thread gateway has no background work (ledger, learning) left."""
    from common import aio

    deadline = time.monotonic() + timeout
    while not aio.background_idle() and time.monotonic() < deadline:
        time.sleep(0.01)


def wait_learnt() -> None:
    """Everything the gateway learnt so far is written to the shared stores, and its
    next request plans with a snapshot refreshed from them."""
    from routing.memory import expire_snapshot

    wait_background_idle()
    expire_snapshot()


def reset_process_caches(test_name: str) -> None:
    """Drop in-process caches and namespace the shared store for this test, so tests
    cannot see each other's catalog, keys, marks or prefixes."""
    from billing import auth, ledger, limits
    from routing import memory, shared
    from routing.catalog import catalog_cache

    catalog_cache.invalidate()
    memory.reset_memory()  # its knowledge too: follow-ups per key (key ids are reused)
    auth._cache.clear()
    auth._unknown.clear()
    ledger._touched.clear()
    limits.forget_key_spend()
    shared._kv = None
    settings.UBERLLM["SHARED_KEY_PREFIX"] = f"ullm-test-{time.time_ns()}-{abs(hash(test_name))}"


@dataclass
class Tenant:
    organisation: object
    user: object
    api_key: object
    key: str


def make_tenant(name: str, *, password: str = "pw-123456789") -> Tenant:
    from billing.services import api_key_create, member_add, organisation_create

    organisation = organisation_create(name=name)
    user = member_add(
        organisation=organisation,
        username=f"{name.lower()}-owner",
        password=password,
        role="owner",
    )
    api_key, key = api_key_create(organisation=organisation, name=f"{name} key")
    return Tenant(organisation, user, api_key, key)


HI = [{"role": "user", "content": "hi"}]
# One tool, asked for by one question, in each wire format's own tool shape (chat
# ``function``, Responses flat ``function``, Messages ``input_schema``).
WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER_QUESTION = "What is the weather in Paris? Use get_weather."


def post_chat(gateway, key: str, **fields):
    """``POST /chat/completions`` of TEST_MODEL saying "hi", with ``fields`` added."""
    import httpx

    return httpx.post(
        f"{gateway.api_url}/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": TEST_MODEL, "messages": HI, **fields},
        timeout=30,
    )


def stream_chat(api_url: str, key: str, body: dict, timeout: float = 30):
    """``httpx.stream`` of ``POST {api_url}/chat/completions`` with ``body`` and ``key``
    (a context manager giving the streamed response)."""
    import httpx

    return httpx.stream(
        "POST",
        f"{api_url}/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=timeout,
    )


def endpoint_admin_form(endpoint, **fields) -> dict:
    """What the admin's endpoint change form posts for ``endpoint``: its provider, model
    and URL, a 1,000-token context, ``tools``, test prices, enabled; ``fields`` added or
    replacing those."""
    return {
        "provider": endpoint.provider_id,
        "model": endpoint.model_id,
        "base_url": endpoint.base_url,
        "context_length": 1000,
        "supported_parameters": ["tools"],
        "price_input": "0.1",
        "price_cache_read": "0.01",
        "price_cache_write": "0",
        "price_output": "0.4",
        "cache_ttl_s": 300,
        "enabled": "on",
        **fields,
    }


def wait_finished_rows(count: int, timeout: float = 40.0) -> list:
    """Wait until ``count`` Activity rows exist and all are finished (the ledger writes
    run beside the request, so they may land just after the response)."""
    from billing.models import Activity

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = list(Activity.unscoped_objects.all())
        if len(rows) >= count and all(r.status != Activity.Status.PENDING for r in rows):
            return rows
        time.sleep(0.02)
    states = [(r.request_id, r.status) for r in Activity.unscoped_objects.all()]
    raise AssertionError(f"expected {count} finished Activity rows, have {states}")


def close_other_connections() -> None:
    """End the gateway threads' PostgreSQL sessions so the test database can be dropped."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    connection.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The URL of the database the tests run on (the test database), for subprocesses."""
    from django.db import connection

    conf = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{conf['NAME']}"
    user = conf.get("USER") or "postgres"
    host, port = conf.get("HOST") or "127.0.0.1", conf.get("PORT") or 5432
    return f"postgres://{user}@{host}:{port}/{conf['NAME']}"


class SubprocessGateway:
    """A second gateway in its own process (its own memory) on the same shared stores."""

    def __init__(self, *, workers: int = 1, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.proc = None
        self.workers = workers
        self.extra_env = env or {}

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def start(self) -> SubprocessGateway:
        import os
        import subprocess
        import sys

        import httpx

        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "UBERLLM_ALLOW_PRIVATE_UPSTREAMS": "true",
            "UBERLLM_EXPLORATION_RATE": "0",
            "UBERLLM_SHARED_KEY_PREFIX": settings.UBERLLM["SHARED_KEY_PREFIX"],
            "UBERLLM_SPEED_CACHE_TTL_S": str(settings.UBERLLM["SPEED_CACHE_TTL_S"]),
            "UBERLLM_LEDGER_FLUSH_INTERVAL_S": str(TEST_FLUSH_INTERVAL_S),
            "UBERLLM_SPEED_SAMPLE_FLUSH_INTERVAL_S": str(TEST_FLUSH_INTERVAL_S),
            "UBERLLM_READ_DOT_ENV": "false",
            **self.extra_env,
        }
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "uberllm.asgi:application",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                "--workers",
                str(self.workers),
            ],
            env=env,
            cwd=settings.BASE_DIR,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz").status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("second gateway did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:
                self.proc.kill()
            self.proc = None
