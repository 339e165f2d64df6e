"""Archive then delete old Activity rows: ``archive_activity --retention-days 400``
(default: ``UBERLLM_ACTIVITY_RETENTION_DAYS``), what the hourly beat task does without
its per-run cap. ``--dry-run`` lists the organisation-months it would archive. Prints
each organisation-month's rows, file, time and rate (docs/operations.md, "Data growth
and retention"); the contract is billing/retention.py's."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from billing.config import billing_config
from billing.retention import activity_archive


class Command(BaseCommand):
    help = "Archive Activity rows older than the retention to gzip JSON lines, then delete them."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--retention-days", type=int, default=billing_config().activity_retention_days
        )
        parser.add_argument("--directory", default=str(billing_config().activity_archive_dir))
        parser.add_argument("--batch", type=int, default=5000, help="ids per delete")
        parser.add_argument("--max-rows", type=int, default=None)
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, **options) -> None:
        if options["retention_days"] <= 0:
            raise CommandError("retention is 0 (keep forever): pass --retention-days N")
        if options["batch"] < 1:
            raise CommandError("--batch must be positive")
        started = time.monotonic()
        result = activity_archive(
            retention_days=options["retention_days"],
            directory=Path(options["directory"]),
            batch=options["batch"],
            max_rows=options["max_rows"],
            dry_run=options["dry_run"],
        )
        if result.cutoff is None:
            self.stdout.write("nothing to archive (no retention, or no day rolled up yet)")
            return
        self.stdout.write(f"keeping rows from {result.cutoff} on")
        for m in result.months:
            if options["dry_run"]:
                self.stdout.write(f"org {m.organisation_id} {m.month:%Y-%m}: {m.written:,} rows")
                continue
            rate = m.deleted / m.seconds if m.seconds else 0
            where = f" -> {m.path} ({m.path.stat().st_size:,} bytes)" if m.path else ""
            self.stdout.write(
                f"org {m.organisation_id} {m.month:%Y-%m}: {m.written:,} rows written, "
                f"{m.deleted:,} deleted in {m.seconds:.1f} s ({rate:,.0f} rows/s; writing "
                f"{m.write_seconds:.1f} s, deleting {m.seconds - m.write_seconds:.1f} s){where}"
            )
        elapsed = time.monotonic() - started
        if options["dry_run"]:
            self.stdout.write(
                f"would archive {result.written:,} rows; "
                f"{result.pending_kept} pending rows before the cutoff would be kept"
            )
            return
        self.stdout.write(
            f"archived {result.written:,} rows, deleted {result.deleted:,} in {elapsed:.1f} s "
            f"({result.deleted / elapsed if elapsed else 0:,.0f} rows/s); "
            f"{result.pending_kept} pending rows before the cutoff kept"
        )
