"""``manage.py bench_big_body [--messages 2000 20000 200000]``: how long a request of many
short messages holds the event loop, inline and in the big-request thread
(lab/benchmark/loopstall.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from lab.benchmark.loopstall import measure, render


class Command(BaseCommand):
    help = "Time how long a big chat body holds the event loop, inline and off the loop."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--messages", type=int, nargs="+", default=[2000, 20000, 200000])

    def handle(self, *args, **options) -> None:
        self.stdout.write(render(measure(options["messages"])))
