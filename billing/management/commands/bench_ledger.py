"""Benchmark the ledger writer's database work: CPU per call for the two shapes the
gateway writes (a short call opened and finished in one batch; a stream opened in one
batch and finished in a later one), at several batch sizes. Prints figures; asserts
nothing. Runs on the configured database, in an organisation it creates and deletes."""

from __future__ import annotations

import time
import uuid
from decimal import Decimal

from django.core.management.base import BaseCommand
from django.utils import timezone

from billing.ledger import AttemptResult, CallResult, OpenRow, ledger_write
from billing.models import Organisation
from billing.services import api_key_create, organisation_create


def _items(organisation_id: int, api_key_id: int, n: int) -> list:
    items = []
    for _ in range(n):
        request_id = f"gen-bench-{uuid.uuid4().hex}"
        row = OpenRow(request_id, organisation_id, api_key_id, "bench/model", True,
                      timezone.now())  # fmt: skip
        result = CallResult(
            request_id=request_id, status="success", http_status=200, provider_slug="alpha",
            prompt_tokens=1200, completion_tokens=40, cost_usd=Decimal("0.000123"),
            prices={"input": "0.1", "output": "0.4"}, ttft_ms=120, total_ms=900,
            routing_strategy="smart", routing_reason="cheapest fast enough",
            prompt_bucket="<8k",
            attempts=[AttemptResult(1, None, "alpha", "cheapest", "success", 200)],
        )  # fmt: skip
        items.append((row, None))
        items.append((row, result))
    return items


class Command(BaseCommand):
    help = "CPU per call of the ledger writer's batches (one-batch calls and streams)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 200])
        parser.add_argument("--calls", type=int, default=2000, help="calls per cell")

    def handle(self, *args, batches: list[int], calls: int, **options) -> None:
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
                self.stdout.write(f"{size:5d}  {short / (rounds * size) * 1e6:22.0f}  "
                                  f"{stream / (rounds * size) * 1e6:30.0f}")  # fmt: skip
        finally:
            Organisation.objects.filter(id=organisation.id).delete()

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
