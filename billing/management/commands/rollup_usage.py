"""Build the daily usage rollups: ``rollup_usage`` rolls every finished day not rolled
yet (what the hourly beat task does); ``--rebuild-from/--rebuild-to`` rebuilds days
already rolled (after a bulk load or a correction into the past)."""

from __future__ import annotations

import time
from datetime import date

from django.core.management.base import BaseCommand

from billing.rollups import rollup_rebuild, rollup_refresh, rollup_through_day


class Command(BaseCommand):
    help = "Roll finished days of Activity into UsageDaily/TtftDaily (docs/operations.md)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--rebuild-from", type=date.fromisoformat)
        parser.add_argument("--rebuild-to", type=date.fromisoformat)

    def handle(self, *args, **options) -> None:
        started = time.monotonic()
        if options["rebuild_from"]:
            count = rollup_rebuild(
                date_from=options["rebuild_from"], date_to=options["rebuild_to"] or date.max
            )
            self.stdout.write(f"rebuilt {count} days")
        rolled = rollup_refresh()
        self.stdout.write(
            f"rolled {len(rolled)} new days; rollups cover through {rollup_through_day()} "
            f"({time.monotonic() - started:.1f} s)"
        )
