"""A light closed-loop HTTP/1.1 load generator for streamed chat completions.

``python -m lab.benchmark.loadgen --url URL --body JSON -c 32 --warmup 1.5 --duration 8
[--header 'Authorization: Bearer ...'] [--watch gateway=PID ...]``

Each of ``-c`` workers keeps one keep-alive connection and sends the next request as
soon as the previous response ended. Raw asyncio protocol (uvloop when installed) and
httptools' C parser: no client library, so a request costs the generator a few tens of
microseconds. It prints one JSON object: completed requests in the measured window,
requests/s, time to first token (the first body bytes carrying a non-empty
``"content"``; ``--plain`` for non-streamed JSON replies, which end without
``[DONE]``), total time, and for each watched process tree its CPU seconds and peak
RSS over the window (read from /proc), plus the generator's own CPU use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from urllib.parse import urlsplit

import httptools

from .procs import Watched, machine_busy

# The first chunk that carries a token: `"content":"x` (any JSON spacing), not `""`.
FIRST_TOKEN = re.compile(rb'"content"\s*:\s*"[^"]')
DONE = b"[DONE]"
perf = time.perf_counter


class ParsedResponses(asyncio.Protocol):
    """A client connection whose bytes feed httptools' response parser, which calls this
    object's ``on_*`` callbacks; a subclass says what a parse error does (``parse_error``)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.parse_error(exc)

    def parse_error(self, exc: httptools.HttpParserError) -> None:
        raise NotImplementedError


class Exchange(ParsedResponses):
    """One keep-alive connection; ``send()`` one request and await its parsed outcome."""

    def __init__(self) -> None:
        super().__init__()
        self.waiter: asyncio.Future | None = None
        self.closed = False
        self.status = 0
        self.first: float | None = None
        self.scan = b""
        self.tail = b""
        self.plain = False  # a JSON (non-streamed) reply: complete without [DONE]

    # asyncio protocol
    def parse_error(self, exc: httptools.HttpParserError) -> None:
        self._fail(exc)
        self.transport.close()

    def connection_lost(self, exc) -> None:
        self.closed = True
        self._fail(exc or ConnectionError("connection closed"))

    def _fail(self, exc: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.status, self.first, self.scan, self.tail = 0, None, b"", b""

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self.first is None:
            window = self.scan + body
            if FIRST_TOKEN.search(window):
                self.first = perf()
            else:
                self.scan = window[-48:]
        self.tail = (self.tail + body)[-48:] if len(body) < 48 else body[-48:]

    def on_message_complete(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            ok = self.status == 200 and (self.plain or DONE in self.tail)
            self.waiter.set_result((self.status, ok, self.first, perf()))
        if not self.parser.should_keep_alive():
            self.transport.close()


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        url = urlsplit(args.url)
        self.host, self.port = url.hostname, url.port or 80
        body = args.body.encode()
        head = [
            f"POST {url.path or '/'} HTTP/1.1",
            f"Host: {url.hostname}:{self.port}",
            "Content-Type: application/json",
            "Accept: text/event-stream",
            f"Content-Length: {len(body)}",
            *args.header,
        ]
        self.request = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        self.args = args
        self.t0 = self.t1 = 0.0
        self.samples: list[tuple[float, float | None, float]] = []  # start, first, end
        self.errors: dict[str, int] = {}
        self.watched = [
            Watched.of(name, int(pid)) for name, pid in (spec.split("=", 1) for spec in args.watch)
        ]

    def _error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    async def worker(self, index: int) -> None:
        # Staggered starts: closed-loop workers started together stay in lockstep (every
        # stream has the same length), so each request would queue behind all others.
        await asyncio.sleep(min(self.args.warmup, 1.0) * index / self.args.concurrency)
        loop = asyncio.get_running_loop()
        conn: Exchange | None = None
        while perf() < self.t1:
            if conn is None or conn.closed:
                try:
                    _, conn = await loop.create_connection(Exchange, self.host, self.port)
                    conn.plain = self.args.plain
                except OSError as exc:
                    self._error(f"connect: {exc.__class__.__name__}")
                    conn = None
                    await asyncio.sleep(0.05)
                    continue
            conn.waiter = loop.create_future()
            start = perf()
            conn.transport.write(self.request)
            try:
                status, ok, first, end = await conn.waiter
            except Exception as exc:  # the connection broke mid-response
                self._error(f"connection: {exc.__class__.__name__}")
                conn.transport.close()
                conn = None
                continue
            if not self.t0 <= end <= self.t1:
                continue
            if ok and first is not None:
                self.samples.append((start, first, end))
            else:
                self._error(f"HTTP {status}" if status != 200 else "stream without [DONE]")

    async def sampler(self) -> None:
        while perf() < self.t1:
            await asyncio.sleep(0.1)
            for watched in self.watched:
                watched.sample()

    async def main(self) -> dict:
        start = perf()
        self.t0 = start + self.args.warmup
        self.t1 = self.t0 + self.args.duration
        workers = [asyncio.ensure_future(self.worker(i)) for i in range(self.args.concurrency)]
        await asyncio.sleep(max(0.0, self.t0 - perf()))
        for watched in self.watched:
            watched.start()
        busy0, total0 = machine_busy()
        own0 = os.times()
        await self.sampler()
        own1 = os.times()
        busy1, total1 = machine_busy()
        for watched in self.watched:
            watched.stop()
        measured = perf() - self.t0
        _, pending = await asyncio.wait(workers, timeout=self.args.drain)
        for task in pending:
            task.cancel()
        return self.result(
            measured,
            own1.user + own1.system - own0.user - own0.system,
            (busy1 - busy0) / max(1, total1 - total0),
        )

    def result(self, measured: float, own_cpu: float, busy: float) -> dict:
        n = len(self.samples)
        ttft = sorted((first - start) * 1000 for start, first, _ in self.samples)
        total = sorted((end - start) * 1000 for start, _, end in self.samples)
        return {
            "concurrency": self.args.concurrency,
            "window_s": round(measured, 3),
            "completed": n,
            "errors": self.errors,
            "rps": n / measured,
            "ttft_ms": summary(ttft),
            "total_ms": summary(total),
            "loadgen_cpu_pct": 100 * own_cpu / measured,
            "machine_busy_pct": 100 * busy,
            "watch": {
                w.name: {
                    "cpu_s": w.cpu_s,
                    "cpu_pct": 100 * w.cpu_s / measured,
                    "cpu_ms_per_req": 1000 * w.cpu_s / n if n else None,
                    "peak_rss_mb": w.peak_rss / 2**20,
                    "processes": len(w.pids),
                }
                for w in self.watched
            },
        }


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, max(0, round(q * len(values) + 0.5) - 1))]


def summary(values: list[float]) -> dict:
    return {
        "p50": pct(values, 0.50),
        "p90": pct(values, 0.90),
        "p99": pct(values, 0.99),
        "mean": sum(values) / len(values) if values else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.benchmark.loadgen")
    parser.add_argument("--url", required=True)
    parser.add_argument("--body", required=True, help="the JSON request body")
    parser.add_argument("--header", action="append", default=[], help="'Name: value'")
    parser.add_argument("-c", "--concurrency", type=int, default=1)
    parser.add_argument("--warmup", type=float, default=1.5)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--drain", type=float, default=30.0, help="max wait for in-flight")
    parser.add_argument("--watch", action="append", default=[], help="name=PID (a tree)")
    parser.add_argument("--plain", action="store_true", help="JSON replies (no [DONE])")
    args = parser.parse_args(argv)
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - plain asyncio works too
        pass
    result = asyncio.run(Run(args).main())
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
