"""``manage.py bench_prompt [--kb 4 100 400 800]``: the gateway's per-request work that
grows with the prompt (parse, token estimate, prefix hashes, upstream body), timed in
this process (lab/benchmark/prompt.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from lab.benchmark.prompt import measure, render


class Command(BaseCommand):
    help = "Time the request work that grows with the prompt's size."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kb", type=int, nargs="+", default=[4, 100, 400, 800])
        parser.add_argument("--repeats", type=int, default=15)

    def handle(self, *args, **options) -> None:
        self.stdout.write(render(measure(options["kb"], options["repeats"])))
