"""``manage.py bench_memory [--duration 300] [--every 15]``: the gateway's RSS over a
sustained unpaced load (lab/benchmark/memory.py; docs/benchmarks.md, round 15)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.benchmark.memory import measure, render
from lab.management.commands.bench_overhead import Command as Overhead


class Command(BaseCommand):
    help = "Print the gateway's resident memory every few seconds of a sustained load."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--duration", type=float, default=300.0, help="seconds of load")
        parser.add_argument("--every", type=float, default=15.0, help="seconds between samples")
        parser.add_argument("--concurrency", type=int, default=32)
        parser.add_argument("--workers", type=int, default=1)

    def handle(self, *args, **options) -> None:
        base = Path(settings.BASE_DIR)
        # The benchmarks' own database (a fresh SQLite file, or DATABASE_URL's), as
        # bench_overhead's; Redis when REDIS_URL is set.
        database_url = Overhead()._database_url(base)
        result = measure(
            base,
            options["duration"],
            options["every"],
            options["concurrency"],
            options["workers"],
            database_url,
            log=lambda line: self.stderr.write(line),
        )
        stores = "sqlite (var/bench/bench.sqlite3)" if database_url else "postgresql"
        self.stdout.write(
            f"bench_memory: database {stores}, shared state "
            f"{'redis' if settings.REDIS_URL else 'in-process'}, uvicorn x {options['workers']}, "
            f"c={options['concurrency']}, unpaced, {options['duration']:g} s\n"
        )
        self.stdout.write(render(result))
