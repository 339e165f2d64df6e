"""Retention of the ledger (writes): ``Activity`` rows (with their ``Attempt`` rows) older
than ``UBERLLM_ACTIVITY_RETENTION_DAYS`` are archived to one gzip JSON-lines file per
organisation and month, then deleted in bounded batches (docs/operations.md, "Data
growth and retention").

Contract:

- Whole UTC months only, and only months every day of which is rolled up
  (``billing.rollups``): the first day kept is the first day of the month that holds
  ``now - retention`` or the day after ``through_day``, whichever is earlier. The
  rollups (``UsageDaily``, ``TtftDaily``, ``UsageDayTotal``, the monthly rows) stay, so
  the Usage page, the keys' spend and the staff report keep showing archived months;
  ``UsageRollupState.archived_before`` is set first, and from then on no rollup of an
  archived day is rebuilt from its (missing) rows.
- A pending row (a call in flight, or one the reconciler has not closed yet) is
  neither archived nor deleted: a later run takes it once it is final (into a file
  numbered after the month's first one).
- Nothing is deleted before the archive file holding it is fully written, flushed,
  fsynced, renamed from its temporary name and its directory fsynced. A run stopped
  midway leaves either a ``.tmp`` file (removed, its rows still in the table) or a
  complete file some of whose rows are not deleted yet: the next run deletes exactly
  those (the ids read back from the file) before archiving anything new.
- Deletes go by ``batch`` ids a transaction (attempts first), so no statement holds
  locks for long on the table the gateway appends to.

One line a call: the Activity row's columns (``organisation_id``, ``api_key_id``,
money as exact decimal strings, times in ISO 8601 UTC) and ``attempts``: its Attempt
rows' columns. Files: ``<directory>/org-<id>/activity-<YYYY-MM>.jsonl.gz`` (then
``activity-<YYYY-MM>.2.jsonl.gz``, ... for rows archived by later runs)."""

from __future__ import annotations

import gzip
import json
import os
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Min, Q

from billing.config import billing_config
from common.metrics import observe_pruned

from .models import Activity, Attempt, Organisation, UsageRollupState
from .rollups import month_end, rollup_through_day

PENDING = Activity.Status.PENDING


@dataclass
class MonthArchived:
    """One organisation-month: rows written to ``path`` and rows deleted."""

    organisation_id: int
    month: date
    path: Path | None
    written: int
    deleted: int
    seconds: float
    write_seconds: float = 0.0  # of ``seconds``: reading the rows and writing the file


@dataclass
class ArchiveResult:
    cutoff: date | None  # the first day kept (None: nothing to archive)
    months: list[MonthArchived] = field(default_factory=list)
    pending_kept: int = 0  # rows before the cutoff left because still pending

    @property
    def written(self) -> int:
        return sum(m.written for m in self.months)

    @property
    def deleted(self) -> int:
        return sum(m.deleted for m in self.months)


def archive_cutoff(*, retention_days: int, now: datetime | None = None) -> date | None:
    """The first day whose rows are kept with ``retention_days`` (None: keep all: no
    retention, or no day rolled up yet). Always the first day of a month."""
    through = rollup_through_day()
    if retention_days <= 0 or through is None:
        return None
    keep_from = (now or datetime.now(UTC)).astimezone(UTC).date() - timedelta(days=retention_days)
    return min(keep_from, through + timedelta(days=1)).replace(day=1)


def activity_archive(
    *,
    retention_days: int,
    directory: Path,
    batch: int = 5000,
    max_rows: int | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> ArchiveResult:
    """Archive then delete every organisation's Activity rows before the cutoff (see the
    module's contract), oldest month first. ``max_rows``: start no new organisation-
    month once that many rows were archived in this run. ``dry_run``: count only."""
    cutoff = archive_cutoff(retention_days=retention_days, now=now)
    result = ArchiveResult(cutoff=cutoff)
    if cutoff is None:
        return result
    before = _day_start(cutoff)
    old = Activity.unscoped_objects.filter(created_at__lt=before)  # every organisation's
    result.pending_kept = old.filter(status=PENDING).count()
    if dry_run:
        for org_id, month, count in _months_to_archive(before):
            result.months.append(MonthArchived(org_id, month, None, count, 0, 0.0))
        return result
    _set_archived_before(cutoff)
    for org_id, month, _count in _months_to_archive(before):
        if max_rows is not None and result.written >= max_rows:
            break
        result.months.append(
            archive_month(
                organisation_id=org_id,
                month=month,
                before=before,
                directory=Path(directory),
                batch=batch,
            )
        )
    return result


def activity_archive_expired(*, max_rows: int | None = None) -> ArchiveResult:
    """``activity_archive`` with the settings (``ACTIVITY_RETENTION_DAYS``, 0 = keep
    forever; ``ACTIVITY_ARCHIVE_DIR``): what the beat task runs."""
    return activity_archive(
        retention_days=billing_config().activity_retention_days,
        directory=billing_config().activity_archive_dir,
        max_rows=max_rows,
    )


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _set_archived_before(cutoff: date) -> None:
    state = UsageRollupState.objects.order_by("id").first()
    if state is not None and (state.archived_before is None or state.archived_before < cutoff):
        UsageRollupState.objects.filter(id=state.id).update(archived_before=cutoff)


def _months_to_archive(before: datetime) -> Iterator[tuple[int, date, int]]:
    """(organisation id, first day of month, rows not pending) of every organisation-
    month with rows before ``before``, oldest first per organisation. Each step is one
    index read of the organisation's oldest row (organisation, -created_at) and one
    count of the month."""
    for org_id in Organisation.objects.order_by("id").values_list("id", flat=True):
        start = None
        while True:
            rows = Activity.objects.for_organisation(org_id).filter(created_at__lt=before)
            rows = rows.exclude(status=PENDING)
            if start is not None:
                rows = rows.filter(created_at__gte=start)
            oldest = rows.aggregate(first=Min("created_at"))["first"]
            if oldest is None:
                break
            month = oldest.astimezone(UTC).date().replace(day=1)
            start = min(_day_start(month_end(month) + timedelta(days=1)), before)
            yield org_id, month, rows.filter(created_at__lt=start).count()


def _month_rows(organisation_id: int, month: date, before: datetime):
    start = _day_start(month)
    end = min(_day_start(month_end(month) + timedelta(days=1)), before)
    rows = Activity.objects.for_organisation(organisation_id)
    return rows.filter(created_at__gte=start, created_at__lt=end).exclude(status=PENDING)


def archive_month(
    *, organisation_id: int, month: date, before: datetime, directory: Path, batch: int = 5000
) -> MonthArchived:
    """Archive and delete one organisation-month (rows before ``before``, not pending)."""
    started = time.monotonic()
    folder = directory / f"org-{organisation_id}"
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"activity-{month:%Y-%m}"
    for leftover in folder.glob(f"{stem}*.tmp"):
        leftover.unlink()  # a run stopped while writing it: its rows were not deleted
    rows = _month_rows(organisation_id, month, before)
    # Rows already in a complete file (a run stopped while deleting): delete them now.
    existing = sorted(folder.glob(f"{stem}.jsonl.gz")) + sorted(folder.glob(f"{stem}.*.jsonl.gz"))
    deleted = 0
    for path in existing:
        deleted += _delete(rows, _ids_in(path), batch)
    path, n = folder / f"{stem}.jsonl.gz", 1
    while path.exists():
        n += 1
        path = folder / f"{stem}.{n}.jsonl.gz"
    write_started = time.monotonic()
    ids = _write(path, rows, batch)
    write_seconds = time.monotonic() - write_started
    deleted += _delete(rows, ids, batch)
    observe_pruned("activity", deleted)  # uberllm_pruned_rows_total{table="activity"}
    return MonthArchived(
        organisation_id,
        month,
        path if ids else None,
        len(ids),
        deleted,
        time.monotonic() - started,
        write_seconds,
    )


ACTIVITY_COLUMNS = [f.attname for f in Activity._meta.concrete_fields]
ATTEMPT_COLUMNS = [f.attname for f in Attempt._meta.concrete_fields if f.attname != "activity_id"]


def _write(path: Path, rows, batch: int) -> array:
    """Write ``rows`` (with their attempts) to ``path`` durably; returns their ids."""
    tmp = path.with_name(path.name + ".tmp")
    ids = array("q")
    encoder = DjangoJSONEncoder(separators=(",", ":"), ensure_ascii=False)
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
            for chunk in _chunks(rows.values(*ACTIVITY_COLUMNS), batch):
                attempts: dict[int, list] = {}
                for attempt in (
                    Attempt.unscoped_objects.filter(activity_id__in=[r["id"] for r in chunk])
                    .order_by("activity_id", "attempt_no", "id")
                    .values("activity_id", *ATTEMPT_COLUMNS)
                ):
                    attempts.setdefault(attempt.pop("activity_id"), []).append(attempt)
                lines = []
                for row in chunk:
                    row["attempts"] = attempts.get(row["id"], [])
                    lines.append(encoder.encode(row))
                    ids.append(row["id"])
                out.write(("\n".join(lines) + "\n").encode())
        raw.flush()
        os.fsync(raw.fileno())
    if not ids:
        tmp.unlink()
        return ids
    if _count_lines(tmp) != len(ids):  # read back (gzip checks its CRC at the end)
        raise OSError(f"{tmp}: the archive does not read back whole; nothing deleted")
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    return ids


def _chunks(values, size: int) -> Iterator[list[dict]]:
    """``values`` rows in (created_at, id) order, ``size`` at a time, by keyset."""
    after = None
    ordered = values.order_by("created_at", "id")
    while True:
        page = ordered
        if after is not None:
            page = page.filter(Q(created_at__gt=after[0]) | Q(created_at=after[0], id__gt=after[1]))
        chunk = list(page[:size])
        if chunk:
            yield chunk
        if len(chunk) < size:
            return
        after = (chunk[-1]["created_at"], chunk[-1]["id"])


def _count_lines(path: Path) -> int:
    count = 0
    with gzip.open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            count += block.count(b"\n")
    return count


def _ids_in(path: Path) -> array:
    ids = array("q")
    with gzip.open(path, "rt", encoding="utf-8") as data:
        for line in data:
            if line.strip():
                ids.append(json.loads(line)["id"])
    return ids


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _delete(rows, ids: array, batch: int) -> int:
    """Delete the rows of ``rows`` (an organisation-month, not pending) whose id is in
    ``ids``, and their attempts, ``batch`` ids a transaction; returns the rows deleted."""
    deleted = 0
    for i in range(0, len(ids), batch):
        chunk = rows.filter(id__in=list(ids[i : i + batch]))
        with transaction.atomic():
            attempts = Attempt.unscoped_objects.filter(activity__in=chunk.values("id"))
            attempts._raw_delete(chunk.db)
            deleted += chunk.order_by()._raw_delete(chunk.db)
    return deleted
