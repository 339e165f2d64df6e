"""``manage.py bench_key_timing [--requests 500]``: how long the gateway takes to answer
401 for a key whose prefix exists with a wrong secret, against one whose prefix does not
exist (a new made-up prefix each time, as a prober sends, and one repeated), over HTTP
to the real application (uvicorn in a thread) on the configured database. If the two
differ, the 401's timing tells which prefixes exist (issue 44; docs/security.md).

It creates a throwaway organisation and key and deletes them at the end."""

from __future__ import annotations

import secrets
import socket
import statistics
import threading
import time
from collections.abc import Callable

import httpx
import uvicorn
from django.core.management.base import BaseCommand

from billing.keys import KEY_SCHEME, PREFIX_LENGTH, SECRET_LENGTH, _random


def _key(prefix: str) -> str:
    return f"{KEY_SCHEME}_{prefix}_{_random(SECRET_LENGTH)}"


def _serve() -> tuple[uvicorn.Server, str]:
    from uberllm.asgi import application

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(application, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, f"http://127.0.0.1:{sock.getsockname()[1]}/api/v1/chat/completions"


def _time_401(client: httpx.Client, url: str, key: str) -> float:
    started = time.perf_counter()
    response = client.post(
        url, json={"model": "m", "messages": []}, headers={"Authorization": f"Bearer {key}"}
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 401, response.text
    return elapsed * 1000


def measure(url: str, cases: dict[str, Callable[[], str]], requests: int) -> dict[str, list]:
    """Milliseconds per 401 of each case, the cases interleaved (so load drifts hit all
    alike), after 20 warm-up requests each."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    with httpx.Client(timeout=10) as client:
        for round_no in range(requests + 20):
            for name, make_key in cases.items():
                elapsed = _time_401(client, url, make_key())
                if round_no >= 20:
                    times[name].append(elapsed)
    return times


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


class Command(BaseCommand):
    help = "Time 401s for a known key prefix with a wrong secret and for unknown prefixes."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--requests", type=int, default=500, help="per case")

    def handle(self, *args, **options) -> None:
        from billing.services import api_key_create, organisation_create

        organisation = organisation_create(name=f"bench-key-timing-{secrets.token_hex(4)}")
        api_key, _ = api_key_create(organisation=organisation, name="bench")
        repeated = _random(PREFIX_LENGTH)
        cases = {
            "known prefix, wrong secret": lambda: _key(api_key.prefix),
            "unknown prefix, new each time": lambda: _key(_random(PREFIX_LENGTH)),
            "unknown prefix, repeated": lambda: _key(repeated),
        }
        server, url = _serve()
        try:
            times = measure(url, cases, options["requests"])
        finally:
            server.should_exit = True
            organisation.delete()
        self._report(times)

    def _report(self, times: dict[str, list[float]]) -> None:
        self.stdout.write(f"{'401 for':32} {'n':>5} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
        for name, values in times.items():
            p50, p90, p99 = (_percentile(values, q) for q in (50, 90, 99))
            self.stdout.write(f"{name:32} {len(values):5} {p50:8.3f} {p90:8.3f} {p99:8.3f}")
        wrong = statistics.median(times["known prefix, wrong secret"])
        for name in list(times)[1:]:
            gap = statistics.median(times[name]) - wrong
            self.stdout.write(f"p50 gap, {name} - wrong secret: {gap:+.3f} ms")
