"""``manage.py bench_sizing``: requests per second per gateway worker and per core, with
1 and 2 uvicorn workers, short streamed and non-streamed replies, repeated (the figures
of docs/operations.md, "Sizing"; ``make sizing``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.benchmark.run import Options
from lab.benchmark.sizing import render, run_sizing
from lab.management.commands.bench_overhead import Command as Overhead


class Command(BaseCommand):
    help = "Measure req/s per gateway worker and per core (unpaced, short replies)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
        parser.add_argument("--repeats", type=int, default=3)
        parser.add_argument("--concurrency", type=int, default=32)
        parser.add_argument("--duration", type=float, default=8.0)
        parser.add_argument("--warmup", type=float, default=1.5)
        parser.add_argument("--json", action="store_true", help="also print the rows as JSON")

    def handle(self, *args, **options) -> None:
        base = Path(settings.BASE_DIR)
        bench = Options(
            duration=options["duration"],
            warmup=options["warmup"],
            database_url=Overhead()._database_url(base),
            redis=bool(settings.REDIS_URL),
            log=lambda message: self.stderr.write(message),
        )
        database = "sqlite (var/bench/bench.sqlite3)" if bench.database_url else "postgresql"
        self.stdout.write(
            f"bench_sizing: database {database}, shared state "
            f"{'redis' if bench.redis else 'in-process'}, uvicorn, c={options['concurrency']}, "
            f"{options['duration']:g} s windows, unpaced emulator, 16-token replies, "
            f"cores: {os.cpu_count()}"
        )
        rows = run_sizing(
            bench,
            base,
            workers=options["workers"],
            repeats=options["repeats"],
            concurrency=options["concurrency"],
        )
        self.stdout.write(render(rows))
        if options["json"]:
            self.stdout.write(json.dumps(rows))
