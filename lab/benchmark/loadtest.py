"""``manage.py loadtest``: the gateway under load and faults (issue 9's "Done when").

Processes (all on 127.0.0.1, free ports): the emulator (one ``bench`` provider, paced
streams), the gateway under uvicorn (``--workers N``) on the configured stores, and for
the fault scenarios a PRIVATE redis-server (``redis-outage``: the shared Redis is never
stopped) or a pausable TCP proxy in front of PostgreSQL (``pg-pause``: only the gateway's
connections go through it). The client runs in this process (asyncio + httptools); the
ledger is read with the ORM before and after, never during, the client's event loop.

Scenarios, each bounded in time and count:
- ``cuts``: N streams at concurrency C, a share cut by the client at a random point
  (a quarter of the cuts at a random time after sending, a quarter at a random time
  after the response headers if no token came first, half after k random tokens);
- ``burst``: N simultaneous streams (connections opened first, requests written at once);
- ``redis-outage`` / ``pg-pause``: open-loop streams at R/s for D s; the private Redis is
  stopped (or the PostgreSQL proxy paused) for F s from D/3 on.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
import orjson
from django.conf import settings
from django.utils import timezone

from common.config import set_knob

from . import figures, rows
from .faultclient import Cut, Reply, connect, encode_request, exchange, request
from .run import (
    EMULATOR_PROFILE,
    free_port,
    gateway_argv,
    gateway_env,
    redis_argv,
    spawn,
    stop_process,
    wait_ready,
)
from .seed import MODEL, PROVIDER, catalog

SCENARIOS = ("cuts", "burst", "redis-outage", "pg-pause")
REQUEST_TIMEOUT_S = 60.0


@dataclass
class Options:
    scenarios: list[str] = field(default_factory=lambda: list(SCENARIOS))
    workers: int = 2
    streams: int = 1500  # cuts: requests in all
    concurrency: int = 500  # cuts
    cut_share: float = 0.3
    burst: int = 1000
    rate: float = 20.0  # redis-outage / pg-pause: requests per second
    duration: float = 30.0  # redis-outage / pg-pause: seconds of load
    fault_s: float = 10.0
    tokens: int = 50
    tokens_per_s: float = 50.0
    ttft_s: float = 0.2
    seed: int = 1
    log: Callable[[str], None] = print


class Stack:
    """The processes of one load test; every one is stopped by ``stop()``."""

    def __init__(self, options: Options, base_dir: Path, database_url: str | None) -> None:
        self.o = options
        self.base_dir = base_dir
        self.work = base_dir / "var" / "loadtest"
        self.work.mkdir(parents=True, exist_ok=True)
        self.database_url = database_url  # None: the configured one (inherited env)
        self.procs: dict[str, object] = {}
        self.ports: dict[str, int] = {}

    # --- processes --------------------------------------------------------------
    def env(self, **overrides: str | None) -> dict[str, str]:
        env = gateway_env("ullm-loadtest", self.database_url)
        for name, value in overrides.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None):
        proc = spawn(argv, self.base_dir, env or self.env(), self.work / f"{name}.log")
        self.procs[name] = proc
        return proc

    def stop_one(self, name: str) -> None:
        stop_process(self.procs.pop(name, None))

    def stop(self) -> None:
        for name in list(self.procs):
            self.stop_one(name)

    @property
    def emulator_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['emulator']}"

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['gateway']}/api/v1/chat/completions"

    def start_emulator(self) -> None:
        profile = json.loads(json.dumps(EMULATOR_PROFILE))
        profile["_comment"] = "manage.py loadtest: paced streams, no jitter."
        profile["providers"][PROVIDER].update(
            ttft_base_s=self.o.ttft_s,
            output_tokens_per_s=self.o.tokens_per_s,
            default_output_tokens=self.o.tokens,
        )
        path = self.work / "emulator.json"
        path.write_text(json.dumps(profile, indent=1))
        self.ports["emulator"] = free_port()
        argv = [
            sys.executable,
            "-m",
            "lab.emulator",
            "--profiles",
            str(path),
            "--port",
            str(self.ports["emulator"]),
        ]
        proc = self._spawn("emulator", argv)
        wait_ready(f"{self.emulator_url}/_health", proc, 30, "emulator")

    def start_gateway(self, label: str, **env: str | None) -> None:
        """(Re)start the gateway; its output goes to var/loadtest/gateway-<label>.log."""
        self.stop_one("gateway")
        port = self.ports["gateway"] = free_port()
        argv = gateway_argv("uvicorn", "uberllm.asgi:application", port, self.o.workers)
        argv += ["--backlog", "4096"]  # the burst scenario connects 1,000 clients at once
        proc = spawn(argv, self.base_dir, self.env(**env), self.work / f"gateway-{label}.log")
        self.procs["gateway"] = proc
        wait_ready(self.gateway_url.replace("chat/completions", "models"), proc, 90, "gateway")

    def start_redis(self, port: int) -> None:
        self._spawn("redis", redis_argv(port, "--maxclients", "10000"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"private redis-server did not start on port {port}")

    def start_pg_proxy(self, target: str) -> int:
        port = free_port()
        proc = self._spawn(
            "pgproxy",
            [
                sys.executable,
                "-m",
                "lab.benchmark.tcpproxy",
                "--listen",
                str(port),
                "--target",
                target,
            ],
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("the PostgreSQL proxy exited")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the PostgreSQL proxy did not start")

    def signal(self, name: str, signum: int) -> None:
        os.kill(self.procs[name].pid, signum)

    def upstream_records(self) -> list[dict]:
        response = httpx.get(
            f"{self.emulator_url}/_log", params={"provider": PROVIDER}, timeout=30, trust_env=False
        )
        response.raise_for_status()
        return response.json()

    def wait_upstream_idle(self, timeout: float) -> float:
        """Wait until no emulator record is in progress; seconds waited."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if not any(r["status"] == "in_progress" for r in self.upstream_records()):
                break
            time.sleep(0.5)
        return time.monotonic() - start


class LoadTest:
    """Runs the chosen scenarios against one stack; each returns its printed report."""

    def __init__(self, options: Options, stack: Stack) -> None:
        self.o = options
        self.stack = stack
        self.rng = random.Random(options.seed)
        self.org = rows.organisation()
        self.shared_key = rows.create_keys(self.org, 1, "loadtest shared")[0][1]

    def body(self, run: str, index: int) -> bytes:
        messages = [
            {"role": "system", "content": "You are a load test. Answer briefly."},
            {"role": "user", "content": figures.tag(run, index) + "say something."},
        ]
        return orjson.dumps({"model": MODEL, "messages": messages, "stream": True})

    def plan_cut(self) -> Cut | None:
        if self.rng.random() >= self.o.cut_share:
            return None
        kind = self.rng.random()
        if kind < 0.25:  # by time from sending: mostly before the gateway answers
            return Cut(delay_s=self.rng.uniform(0.0, self.o.ttft_s + 0.1))
        if kind < 0.5:  # after the response headers, before the first token
            return Cut(after_headers_s=self.rng.uniform(0.0, self.o.ttft_s))
        return Cut(tokens=self.rng.randint(1, self.o.tokens - 1))

    # --- scenarios ------------------------------------------------------------------
    def cuts(self) -> str:
        run, n = secrets.token_hex(3), self.o.streams
        keys = rows.create_keys(self.org, n, f"loadtest cuts {run}")
        index_of_key = {key_id: i for i, (key_id, _) in enumerate(keys)}
        replies = [Reply(index=i, cut=self.plan_cut()) for i in range(n)]
        since = timezone.now() - timedelta(seconds=1)
        self.o.log(f"cuts: {n} streams at concurrency {self.o.concurrency} ...")
        started = time.monotonic()
        asyncio.run(self._closed_loop(replies, [k for _, k in keys], run))
        elapsed = time.monotonic() - started
        idle = self.stack.wait_upstream_idle(30)
        settled = rows.wait_settled(self.org, since, 60)
        upstream = figures.upstream_by_index(self.stack.upstream_records(), run)
        by_index: dict[int, list[figures.Row]] = {}
        for row in rows.rows_since(self.org, since):
            if row.api_key_id in index_of_key:
                by_index.setdefault(index_of_key[row.api_key_id], []).append(row)
        found, targets = figures.cuts(replies, upstream, by_index)
        found["client run"] = (
            f"{elapsed:.1f} s; settled: upstream {idle:.1f} s, rows {settled:.1f} s"
        )
        return figures.render("cuts", found, targets)

    async def _closed_loop(self, replies: list[Reply], keys: list[str], run: str) -> None:
        todo = iter(replies)

        async def worker() -> None:
            for reply in todo:
                body = self.body(run, reply.index)
                await request(
                    self.stack.gateway_url, body, keys[reply.index], reply, REQUEST_TIMEOUT_S
                )

        await asyncio.gather(*(worker() for _ in range(self.o.concurrency)))

    def burst(self) -> str:
        run, n = secrets.token_hex(3), self.o.burst
        replies = [Reply(index=i) for i in range(n)]
        since = timezone.now() - timedelta(seconds=1)
        self.o.log(f"burst: {n} simultaneous streams ...")
        asyncio.run(self._burst(replies, run))
        self.stack.wait_upstream_idle(30)
        rows.wait_settled(self.org, since, 60)
        found, targets = figures.burst(replies, rows.rows_since(self.org, since))
        return figures.render("burst", found, targets)

    async def _burst(self, replies: list[Reply], run: str) -> None:
        url = self.stack.gateway_url
        connected = await asyncio.gather(*(connect(url, r) for r in replies))
        key = self.shared_key
        pending = [
            exchange(
                conn,
                reply,
                encode_request(url, self.body(run, reply.index), key),
                REQUEST_TIMEOUT_S,
            )
            for conn, reply in zip(connected, replies, strict=True)
            if conn is not None
        ]
        await asyncio.gather(*pending)

    def steady(self, fault: str, on: Callable[[], None], off: Callable[[], None]) -> str:
        run = secrets.token_hex(3)
        n = int(self.o.rate * self.o.duration)
        replies = [Reply(index=i) for i in range(n)]
        since = timezone.now() - timedelta(seconds=1)
        self.o.log(f"{fault}: {n} streams at {self.o.rate:g}/s, fault for {self.o.fault_s:g} s")
        window = asyncio.run(self._open_loop(replies, run, on, off))
        self.stack.wait_upstream_idle(30)
        settled = rows.wait_settled(self.org, since, 90)
        found, targets = figures.steady(replies, rows.rows_since(self.org, since), window, fault)
        found["rows settled after"] = f"{settled:.1f} s"
        return figures.render(fault, found, targets)

    async def _open_loop(self, replies, run, on, off) -> tuple[float, float]:
        url, start = self.stack.gateway_url, time.time()
        fault_at = start + self.o.duration / 3
        window = [fault_at, fault_at + self.o.fault_s]

        async def fault() -> None:
            await asyncio.sleep(max(0.0, fault_at - time.time()))
            window[0] = time.time()
            await asyncio.to_thread(on)
            await asyncio.sleep(self.o.fault_s)
            window[1] = time.time()
            await asyncio.to_thread(off)

        async def one(reply: Reply) -> None:
            await asyncio.sleep(max(0.0, start + reply.index / self.o.rate - time.time()))
            await request(
                url, self.body(run, reply.index), self.shared_key, reply, REQUEST_TIMEOUT_S
            )

        await asyncio.gather(fault(), *(one(r) for r in replies))
        return window[0], window[1]

    def redis_outage(self) -> str:
        port = free_port()
        self.stack.start_redis(port)
        self.stack.start_gateway("redis-outage", REDIS_URL=f"redis://127.0.0.1:{port}/0")

        def restart() -> None:
            self.stack.start_redis(port)

        try:
            return self.steady("redis-outage", lambda: self.stack.stop_one("redis"), restart)
        finally:
            self.stack.stop_one("gateway")
            self.stack.stop_one("redis")

    def pg_pause(self) -> str:
        db = settings.DATABASES["default"]
        if not db["ENGINE"].endswith("postgresql"):
            return "== pg-pause ==\n  skipped: DATABASE_URL does not select PostgreSQL"
        target = f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
        port = self.stack.start_pg_proxy(target)
        auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
        url = f"postgres://{auth}@127.0.0.1:{port}/{db['NAME']}"
        self.stack.start_gateway("pg-pause", DATABASE_URL=url)
        try:
            return self.steady(
                "pg-pause",
                lambda: self.stack.signal("pgproxy", signal.SIGUSR1),
                lambda: self.stack.signal("pgproxy", signal.SIGUSR2),
            )
        finally:
            self.stack.stop_one("gateway")
            self.stack.stop_one("pgproxy")

    def run(self) -> list[str]:
        reports = []
        plain = [s for s in self.o.scenarios if s in ("cuts", "burst")]
        if plain:
            self.stack.start_gateway("-".join(plain))
            try:
                for name in plain:
                    reports.append(getattr(self, name)())
                    self.o.log(reports[-1])
            finally:
                self.stack.stop_one("gateway")
        for name, method in (("redis-outage", self.redis_outage), ("pg-pause", self.pg_pause)):
            if name in self.o.scenarios:
                reports.append(method())
                self.o.log(reports[-1])
        return reports


def seed_catalog(emulator_url: str) -> None:
    from django.core.management import call_command

    from providers.services import catalog_import

    from .database import ensure_database

    ensure_database(settings.DATABASES["default"])
    call_command("migrate", interactive=False, verbosity=0)
    set_knob("ALLOW_PRIVATE_UPSTREAMS", True)  # the emulator is on loopback
    catalog_import(data=catalog(emulator_url))


def run(options: Options, base_dir: Path, database_url: str | None) -> list[str]:
    stack = Stack(options, base_dir, database_url)
    try:
        stack.start_emulator()
        seed_catalog(stack.emulator_url)
        return LoadTest(options, stack).run()
    finally:
        stack.stop()
