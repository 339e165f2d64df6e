"""``manage.py bench_ab --base DIR``: this checkout's gateway against another version's
(a directory with that version's code, e.g. ``git archive <commit> | tar -x -C DIR``
and a ``.venv`` link), both up at once, cells alternated (lab/benchmark/pair.py).
SQLite, one file per side; prints medians over the rounds and CPU ratios."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lab.benchmark.pair import DEFAULT_CELLS, parse_cell, render, run_pair, summarise


class Command(BaseCommand):
    help = "Paired A/B of two gateway versions (SQLite), cells alternated."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--base", required=True, help="directory of the other version")
        parser.add_argument(
            "--cells", nargs="+", default=None, help="mode:concurrency, e.g. paced:32 unpaced:1"
        )
        parser.add_argument("--repeats", type=int, default=2)
        parser.add_argument("--duration", type=float, default=5.0)
        parser.add_argument("--workers", type=int, default=1)

    def handle(self, *args, **options) -> None:
        base = Path(options["base"]).resolve()
        if not (base / "manage.py").exists():
            raise CommandError(f"{base} is not a checkout (no manage.py)")
        cells = [parse_cell(c) for c in options["cells"]] if options["cells"] else DEFAULT_CELLS
        dirs = {"base": base, "this": Path(settings.BASE_DIR)}
        results = run_pair(
            dirs,
            cells,
            options["repeats"],
            options["duration"],
            options["workers"],
            lambda m: self.stderr.write(m),
        )
        self.stdout.write(render(summarise(results, cells, list(dirs)), list(dirs)))
