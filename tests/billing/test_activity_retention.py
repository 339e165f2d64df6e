"""Retention of the ledger (billing/retention.py): whole months past the retention are
archived to gzip JSON lines per organisation and month, then deleted; pending rows stay;
the Usage figures of archived months are unchanged (read from the rollups). Runs on the
real database (SQLite or PostgreSQL) and the real file system."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from billing import selectors
from billing.models import Activity, Attempt, Membership, UsageRollupState
from billing.retention import activity_archive, activity_archive_expired, archive_cutoff
from billing.rollups import rollup_day, rollup_rebuild, rollup_refresh
from billing.selectors import ActivityFilters
from billing.tasks import activity_archive_task
from lab.management.commands.seed_activity import seed_activity

from ..support import make_tenant

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
CUTOFF = date(2026, 1, 1)  # with RETENTION: November and December 2025 go
RETENTION = (NOW.date() - date(2026, 1, 10)).days


@pytest.fixture
def ledger():
    """Two organisations with ~4 months of calls (from mid-November 2025), a call still
    pending in December, rolled up through the day before NOW."""
    a, b = make_tenant("KeepA"), make_tenant("KeepB")
    seed_activity(organisation=a.organisation, rows=900, months=4, keys=2, batch=500, now=NOW)
    seed_activity(organisation=b.organisation, rows=300, months=4, keys=1, batch=300, now=NOW)
    pending = Activity.objects.create(
        request_id="pending-dec",
        organisation=a.organisation,
        api_key=a.api_key,
        model_slug="m/x",
        status="pending",
        created_at=datetime(2025, 12, 20, tzinfo=UTC),
    )
    Attempt.objects.create(activity=pending, attempt_no=1, provider_slug="alpha", outcome="")
    rollup_refresh(now=NOW)
    return a, b, pending


def _figures(org: int) -> tuple:
    """What the Usage page, the keys page and the staff report show, as plain values."""
    year = {"date_from": date(2025, 3, 15), "date_to": NOW.date()}
    summary = selectors.usage_summary(organisation_id=org, **year)
    ttft = selectors.usage_ttft(organisation_id=org, filters=ActivityFilters(**year))
    days = selectors.usage_days(organisation_id=org, **year)
    keys = [
        (k.id, k.calls_total, k.spend_total)
        for k in selectors.api_key_list(organisation_id=org, now=NOW)
    ]
    staff = [
        (o.id, o.calls, o.spend_total, o.spend_last_month)
        for o in selectors.unscoped_organisation_spend(now=NOW)
    ]
    return _plain((summary, ttft, days, keys, staff, selectors.usage_totals(organisation_id=org)))


def _plain(value):
    """Comparable values; money to 1e-8 (SQLite sums decimals as floats, so the order of a
    sum shows in the 14th digit; PostgreSQL sums exactly)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return round(value, 8)
    if isinstance(value, float):
        return round(value, 6)
    if dataclasses.is_dataclass(value):
        return [_plain(getattr(value, f.name)) for f in dataclasses.fields(value)]
    return value


def _usage_csv(user, by: str) -> bytes:
    client = Client()
    client.force_login(user)
    response = client.get(
        "/usage.csv", {"by": by, "date_from": "2025-11-01", "date_to": NOW.date().isoformat()}
    )
    assert response.status_code == 200
    return response.content


def _lines(path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as data:
        return [json.loads(line) for line in data]


def test_old_months_are_archived_then_deleted_and_usage_is_unchanged(ledger, tmp_path):
    a, b, pending = ledger
    org = a.organisation.id
    user = get_user_model().objects.create_user("keep-owner")
    Membership.objects.create(organisation=a.organisation, user=user, role="owner")
    before = _figures(org)
    csv_before = {by: _usage_csv(user, by) for by in ("day", "model", "key", "ttft")}
    old = Activity.unscoped_objects.filter(created_at__lt=datetime(2026, 1, 1, tzinfo=UTC))
    expected = {
        (r.organisation_id, r.created_at.strftime("%Y-%m")): r for r in old.exclude(id=pending.id)
    }
    ids_before = set(old.exclude(id=pending.id).values_list("id", flat=True))
    a_ids = set(Activity.unscoped_objects.filter(organisation_id=org).values_list("id", flat=True))
    assert archive_cutoff(retention_days=RETENTION, now=NOW) == CUTOFF

    result = activity_archive(retention_days=RETENTION, directory=tmp_path, batch=40, now=NOW)

    assert result.cutoff == CUTOFF and result.pending_kept == 1
    # Every row before the cutoff is gone but the pending one (with its attempt).
    assert list(old.values_list("id", flat=True)) == [pending.id]
    assert Attempt.unscoped_objects.filter(activity_id=pending.id).count() == 1
    assert not Attempt.unscoped_objects.filter(activity__isnull=True).exists()
    assert (
        Activity.unscoped_objects.filter(created_at__gte=datetime(2026, 1, 1, tzinfo=UTC)).count()
        > 0
    )
    assert UsageRollupState.objects.get().archived_before == CUTOFF
    # One file per organisation and month, holding exactly the deleted rows.
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert files == [
        f"org-{a.organisation.id}",
        f"org-{a.organisation.id}/activity-2025-11.jsonl.gz",
        f"org-{a.organisation.id}/activity-2025-12.jsonl.gz",
        f"org-{b.organisation.id}",
        f"org-{b.organisation.id}/activity-2025-11.jsonl.gz",
        f"org-{b.organisation.id}/activity-2025-12.jsonl.gz",
    ]
    archived = [line for path in tmp_path.rglob("*.gz") for line in _lines(path)]
    assert {line["id"] for line in archived} == ids_before
    assert len(archived) == len(ids_before) == result.written == result.deleted
    # A line is the row (money exact, times ISO UTC) with its attempts.
    for (org_id, month), row in expected.items():
        line = next(
            x
            for x in _lines(tmp_path / f"org-{org_id}" / f"activity-{month}.jsonl.gz")
            if x["id"] == row.id
        )
        assert Decimal(line["cost_usd"]) == row.cost_usd
        assert datetime.fromisoformat(line["created_at"].replace("Z", "+00:00")) == row.created_at
        assert line["request_id"] == row.request_id and line["api_key_id"] == row.api_key_id
        assert [x["attempt_no"] for x in line["attempts"]] == [1]
        assert line["attempts"][0]["provider_slug"] == row.provider_slug
    # The Usage page, keys page and staff report show the same figures: old months are
    # read from the rollups only, and a rebuild of archived days leaves them alone.
    assert _figures(org) == before
    assert {by: _usage_csv(user, by) for by in csv_before} == csv_before
    # The Activity page: its totals keep the archived calls, its pages count the rows.
    client = Client()
    client.force_login(user)
    page = client.get("/").context["page"]
    assert (
        page.paginator.count
        == Activity.unscoped_objects.filter(
            organisation_id=org, created_at__gte=datetime(2026, 1, 1, tzinfo=UTC)
        ).count()
    )
    assert client.get("/").context["totals"]["calls"] == Activity.unscoped_objects.filter(
        organisation_id=org
    ).count() + len([i for i in ids_before if i in a_ids])
    december = client.get("/", {"date_from": "2025-12-01", "date_to": "2025-12-31"})
    assert december.context["page"].paginator.count == 0
    rollup_rebuild(date_from=date(2025, 11, 1), date_to=date(2026, 1, 31))
    assert rollup_day(date(2025, 12, 5)) == 0
    assert _figures(org) == before
    # A second run has nothing left to do.
    again = activity_archive(retention_days=RETENTION, directory=tmp_path, batch=40, now=NOW)
    assert (again.written, again.deleted, again.pending_kept) == (0, 0, 1)


def test_a_run_stopped_midway_is_finished_by_the_next_and_late_rows_get_a_second_file(
    ledger, tmp_path
):
    a, _, pending = ledger
    org = a.organisation.id
    december = Activity.unscoped_objects.filter(
        organisation_id=org,
        created_at__gte=datetime(2025, 12, 1, tzinfo=UTC),
        created_at__lt=datetime(2026, 1, 1, tzinfo=UTC),
    )
    total = december.exclude(id=pending.id).count()
    # A stopped run: December's file complete, only its first rows deleted, and a
    # temporary file of November half written.
    from billing import retention

    folder = tmp_path / f"org-{org}"
    folder.mkdir()
    rows = retention._month_rows(org, date(2025, 12, 1), datetime(2026, 1, 1, tzinfo=UTC))
    ids = retention._write(folder / "activity-2025-12.jsonl.gz", rows, 50)
    retention._delete(rows, ids[:30], 10)
    (folder / "activity-2025-11.jsonl.gz.tmp").write_bytes(b"\x1f\x8b half")
    assert december.count() == total + 1 - 30

    result = activity_archive(retention_days=RETENTION, directory=tmp_path, batch=25, now=NOW)
    by_month = {(m.organisation_id, m.month): m for m in result.months}
    december_run = by_month[(org, date(2025, 12, 1))]
    assert (december_run.written, december_run.deleted) == (0, total - 30)
    assert december_run.path is None  # nothing new: no second file
    assert list(december.values_list("id", flat=True)) == [pending.id]
    assert len(_lines(folder / "activity-2025-12.jsonl.gz")) == total
    assert not list(folder.glob("*.tmp"))
    assert (folder / "activity-2025-11.jsonl.gz").exists()
    # The pending call ends later: the next run archives it into a second file.
    Activity.unscoped_objects.filter(id=pending.id).update(status="error")
    late = activity_archive(retention_days=RETENTION, directory=tmp_path, batch=25, now=NOW)
    assert (late.written, late.deleted, late.pending_kept) == (1, 1, 0)
    assert [x["request_id"] for x in _lines(folder / "activity-2025-12.2.jsonl.gz")] == [
        "pending-dec"
    ]
    assert not Attempt.unscoped_objects.filter(activity_id=pending.id).exists()


def test_no_retention_or_no_rollup_archives_nothing(tmp_path, settings):
    a = make_tenant("KeepNone")
    seed_activity(organisation=a.organisation, rows=60, months=3, keys=1, now=NOW)
    # Without rollups nothing is archived (the rows are all the history there is).
    assert archive_cutoff(retention_days=1, now=NOW) is None
    assert activity_archive(retention_days=1, directory=tmp_path, now=NOW).deleted == 0
    rollup_refresh(now=NOW)
    # Retention 0 (the default): keep forever; the beat task is then a no-op.
    settings.UBERLLM = {
        **settings.UBERLLM,
        "ACTIVITY_RETENTION_DAYS": 0,
        "ACTIVITY_ARCHIVE_DIR": str(tmp_path),
    }
    assert activity_archive_expired().cutoff is None
    assert activity_archive_task() == 0
    assert Activity.unscoped_objects.count() == 60 and not list(tmp_path.iterdir())
    # The months not wholly rolled up are kept whatever the retention.
    assert archive_cutoff(retention_days=1, now=NOW) == date(2026, 3, 1)


def _archive_command(directory, *options: str) -> str:
    """``manage.py archive_activity`` keeping 30 days, into ``directory``: its output."""
    out = io.StringIO()
    retention = ("--retention-days", "30", "--directory", str(directory))
    call_command("archive_activity", *retention, *options, stdout=out)
    return out.getvalue()


def test_the_command_dry_run_lists_and_the_run_archives(ledger, tmp_path):
    a, _, _ = ledger
    # The command's clock is the real one: every seeded month before the rolled one goes.
    text = _archive_command(tmp_path, "--dry-run")
    assert "keeping rows from 2026-03-01 on" in text
    assert f"org {a.organisation.id} 2025-11:" in text and "would archive" in text
    assert not list(tmp_path.iterdir())
    kept = Activity.unscoped_objects.filter(
        created_at__gte=datetime(2026, 3, 1, tzinfo=UTC)
    ).count()
    text = _archive_command(tmp_path, "--batch", "100")
    assert "archived" in text and "1 pending rows before the cutoff kept" in text
    assert Activity.unscoped_objects.count() == kept + 1
    assert len(list(tmp_path.rglob("*.jsonl.gz"))) == 8  # 2 organisations x 4 months
