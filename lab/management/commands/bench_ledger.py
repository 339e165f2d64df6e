"""Benchmark the ledger writer's database work: CPU per call for the two shapes the
gateway writes (a short call opened and finished in one batch; a stream opened in one
batch and finished in a later one), at several batch sizes. With ``--contended``, also
the wall time of each batch while another thread keeps the CPU busy in Python, as the
event loop's thread does under load (the writer then gets the GIL back only every
switch interval each time it lets go of it). Prints figures; asserts nothing. Runs on
the configured database, in an organisation it creates and deletes."""

from __future__ import annotations

import threading
import time
import uuid
from decimal import Decimal

from django.core.management.base import BaseCommand
from django.utils import timezone

from billing.ledger import AttemptResult, CallResult, Checkpoint, OpenRow, ledger_write
from billing.models import Organisation
from billing.services import api_key_create, organisation_create
from providers.models import Endpoint, Model, Provider


def _checkpoint(request_id: str, endpoint_id: int | None) -> Checkpoint:
    """A heartbeat of a stream that has delivered tokens (routing.gateway.heartbeat)."""
    return Checkpoint(
        request_id,
        timezone.now(),
        provider_slug="alpha",
        endpoint_id=endpoint_id,
        prompt_tokens=1200,
        completion_tokens=20,
        cost_usd=Decimal("0.0001"),
        prices={"input": "0.1", "output": "0.4"},
    )


def _items(organisation_id: int, api_key_id: int, n: int) -> list:
    items = []
    for _ in range(n):
        request_id = f"gen-bench-{uuid.uuid4().hex}"
        row = OpenRow(request_id, organisation_id, api_key_id, "bench/model", True, timezone.now())
        result = CallResult(
            request_id=request_id,
            status="success",
            http_status=200,
            provider_slug="alpha",
            prompt_tokens=1200,
            completion_tokens=40,
            cost_usd=Decimal("0.000123"),
            prices={"input": "0.1", "output": "0.4"},
            ttft_ms=120,
            total_ms=900,
            routing_strategy="smart",
            routing_reason="cheapest fast enough",
            prompt_bucket="<8k",
            attempts=[AttemptResult(1, None, "alpha", "cheapest", "success", 200)],
        )
        items.append((row, None))
        items.append((row, result))
    return items


class Command(BaseCommand):
    help = "CPU per call of the ledger writer's batches (one-batch calls and streams)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 200])
        parser.add_argument("--calls", type=int, default=2000, help="calls per cell")
        parser.add_argument(
            "--contended",
            action="store_true",
            help="also time batches beside a thread that keeps the CPU busy",
        )

    def handle(self, *args, batches: list[int], calls: int, contended: bool, **options) -> None:
        organisation = organisation_create(name=f"bench-ledger-{uuid.uuid4().hex[:8]}")
        api_key, _ = api_key_create(organisation=organisation, name="bench")
        ids = (organisation.id, api_key.id)
        try:
            ledger_write(_items(*ids, 4))  # warm-up: connection, statement caches
            self.stdout.write("batch  one-batch call CPU us  stream (open, finish) CPU us")
            for size in batches:
                rounds = max(1, calls // size)
                short = self._cpu(rounds, lambda size=size: [ledger_write(_items(*ids, size))])
                stream = self._cpu(rounds, lambda size=size: self._stream_batches(ids, size))
                self.stdout.write(
                    f"{size:5d}  {short / (rounds * size) * 1e6:22.0f}  "
                    f"{stream / (rounds * size) * 1e6:30.0f}"
                )
            if contended:
                self._contended(ids, batches)
        finally:
            Organisation.objects.filter(id=organisation.id).delete()

    def _contended(self, ids: tuple[int, int], batches: list[int]) -> None:
        # The heartbeats of served streams name an endpoint: a throwaway one (a model and
        # its endpoints are deleted together; the catalog's own are left alone).
        model = Model.objects.create(slug=f"bench-ledger/{uuid.uuid4().hex[:8]}", name="bench")
        provider, new = Provider.objects.get_or_create(slug="bench-ledger", defaults={"name": "b"})
        endpoint = Endpoint.objects.create(
            provider=provider, model=model, base_url="https://bench.invalid/v1"
        )
        try:
            self._contended_table(ids, batches, endpoint.id)
        finally:
            model.delete()
            if new:
                provider.delete()

    def _contended_table(self, ids: tuple[int, int], batches: list[int], endpoint_id: int) -> None:
        self.stdout.write("\nwall ms per batch, idle / beside a busy thread (median of 5)")
        self.stdout.write(
            "batch    one-batch calls    stream openings  heartbeats served      stream endings"
        )
        for size in batches:
            idle = self._walls(ids, size, endpoint_id)
            with _BusyThread():
                busy = self._walls(ids, size, endpoint_id)
            cells = [f"{a:7.1f} / {b:7.1f}" for a, b in zip(idle, busy, strict=True)]
            self.stdout.write(f"{size:5d}  " + "  ".join(f"{c:>17}" for c in cells))

    @staticmethod
    def _walls(ids: tuple[int, int], size: int, endpoint_id: int, repeats: int = 5) -> list[float]:
        samples: list[list[float]] = [[], [], [], []]
        for _ in range(repeats):
            items = _items(*ids, size)
            opens = [item for item in items if item[1] is None]
            beats = [(row, _checkpoint(row.request_id, endpoint_id)) for row, _ in opens]
            ends = [item for item in items if item[1] is not None]
            for column, batch in enumerate((_items(*ids, size), opens, beats, ends)):
                started = time.perf_counter()
                ledger_write(batch)
                samples[column].append((time.perf_counter() - started) * 1e3)
        return [sorted(column)[len(column) // 2] for column in samples]

    @staticmethod
    def _stream_batches(ids: tuple[int, int], size: int) -> None:
        items = _items(*ids, size)
        ledger_write([item for item in items if item[1] is None])
        ledger_write([item for item in items if item[1] is not None])

    @staticmethod
    def _cpu(rounds: int, work) -> float:
        started = time.process_time()
        for _ in range(rounds):
            work()
        return time.process_time() - started


class _BusyThread:
    """A thread spinning in Python while the block runs (holding the GIL as a saturated
    event loop would)."""

    def __enter__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _spin(self) -> None:
        spins = 0
        while not self._stop.is_set():
            spins += 1
