"""Daily usage rollups (billing/rollups.py) and the reads built on them: the same figures
as reading every Activity row, whatever the filters and wherever the range crosses the
last rolled day; the seed and timings commands. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db.models import F
from django.test import Client

from billing import selectors
from billing.models import (
    Activity,
    ApiKey,
    TtftDaily,
    UsageDaily,
    UsageDayTotal,
    UsageRollupState,
)
from billing.rollups import (
    SETTLE_MARGIN,
    day_totals,
    last_final_day,
    rollup_day,
    rollup_months_through,
    rollup_rebuild,
    rollup_refresh,
    rollup_through_day,
    round_ttft,
)
from billing.savings import Savings
from billing.selectors import ActivityFilters
from lab.management.commands.seed_activity import seed_activity

from ..support import make_tenant

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
D = Decimal


@pytest.fixture
def ledger():
    """Two organisations with ~4 months of seeded calls each, plus edge rows for A: a
    call no provider served, a pending call, calls today (after any rolled day)."""
    a, b = make_tenant("RollA"), make_tenant("RollB")
    seed_activity(organisation=a.organisation, rows=1500, months=4, keys=3, batch=700, now=NOW)
    seed_activity(organisation=b.organisation, rows=400, months=4, keys=2, batch=400, now=NOW)
    base = {
        "model_slug": "m/edge",
        "status": "error",
        "prompt_bucket": "",
        "ttft_ms": None,
        "organisation": a.organisation,
    }
    Activity.objects.create(request_id="edge-1", created_at=NOW - timedelta(days=40), **base)
    Activity.objects.create(
        request_id="edge-2",
        created_at=NOW - timedelta(days=3),
        provider_slug="alpha",
        api_key=a.api_key,
        **{**base, "status": "pending", "ttft_ms": 87},
    )
    for i in range(3):
        Activity.objects.create(
            request_id=f"today-{i}",
            created_at=NOW - timedelta(minutes=10 * i),
            provider_slug="bravo",
            api_key=a.api_key,
            cost_usd=D("0.5"),
            prompt_tokens=9,
            **{**base, "status": "success", "prompt_bucket": "<8k", "ttft_ms": 1234 + i},
        )
    return a, b


def _n(value):
    """Money compared to 1e-8: SQLite sums decimals as floats, so the order of a sum shows
    in the 14th digit (PostgreSQL sums exactly)."""
    if isinstance(value, Decimal):
        return round(value, 8)
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Savings):
        return tuple(_n(v) for v in (value.vs_list, value.vs_list_percent, value.vs_cheapest))
    if isinstance(value, tuple | list):
        return tuple(_n(v) for v in value)
    return value


def _raw(organisation_id: int, filters: ActivityFilters | None = None):
    return selectors.activity_list(organisation_id=organisation_id, filters=filters)


def _expected_ttft(queryset) -> dict:
    """p50/p90 of the rounded TTFTs, nearest rank, from every row (the reference)."""
    values = defaultdict(list)
    for provider, bucket, ms in queryset.filter(ttft_ms__isnull=False).values_list(
        "provider_slug", "prompt_bucket", "ttft_ms"
    ):
        if provider and bucket:
            values[(provider, bucket)].append(round_ttft(ms))
    out = {}
    for key, vs in values.items():
        vs.sort()
        out[key] = {
            "median_ms": vs[math.ceil(0.5 * len(vs)) - 1],
            "p90_ms": vs[math.ceil(0.9 * len(vs)) - 1],
            "calls": len(vs),
        }
    return out


def _flat_ttft(rows: list[dict]) -> dict:
    return {(r["provider"], b): v for r in rows for b, v in r["buckets"].items()}


FILTER_CASES = [
    ActivityFilters(),
    ActivityFilters(model="deepseek/v4"),
    ActivityFilters(provider="charlie", status="error"),
    ActivityFilters(status="cancelled"),
    ActivityFilters(date_from=(NOW - timedelta(days=50)).date()),
    ActivityFilters(
        date_from=(NOW - timedelta(days=90)).date(), date_to=(NOW - timedelta(days=30)).date()
    ),
    ActivityFilters(date_from=(NOW - timedelta(days=1)).date(), date_to=NOW.date()),
    ActivityFilters(request_id="edge-2"),
]


def _assert_reads_match_rows(a, b) -> None:
    org = a.organisation.id
    keys = list(ApiKey.unscoped_objects.filter(organisation_id=org).values_list("id", flat=True))
    for filters in [*FILTER_CASES, ActivityFilters(api_key_id=keys[1])]:
        raw = _raw(org, filters)
        expected = selectors.activity_totals(raw)
        got = selectors.usage_totals(organisation_id=org, filters=filters)
        for name in ("calls", "cost", "prompt", "cached", "completion", "estimated"):
            assert _n(got[name]) == _n(expected[name]), (filters, name)
        assert _n(got["savings"]) == _n(expected["savings"]), filters
        for by, old in (
            ("model_slug", selectors.usage_per_model),
            ("provider_slug", selectors.usage_per_provider),
            ("api_key", selectors.usage_per_key),
        ):
            fields = ("calls", "cost", "prompt", "cached", "completion", "savings")
            label = "api_key_id" if by == "api_key" else by
            want = {r[label]: _n(tuple(r[f] for f in fields)) for r in old(raw)}
            have = selectors.usage_by(organisation_id=org, filters=filters, by=by)
            assert {r[label]: _n(tuple(r[f] for f in fields)) for r in have} == want, (filters, by)
            assert [r[label] for r in have] == [r[label] for r in old(raw)], (filters, by)
        assert _flat_ttft(selectors.usage_ttft(organisation_id=org, filters=filters)) == (
            _expected_ttft(raw)
        ), filters
    date_from, date_to = (NOW - timedelta(days=60)).date(), NOW.date()
    raw = _raw(org, ActivityFilters(date_from=date_from, date_to=date_to))
    want = selectors.usage_per_day(raw, date_from=date_from, date_to=date_to)
    have = selectors.usage_days(organisation_id=org, date_from=date_from, date_to=date_to)
    fields = ("day", "calls", "cost", "prompt", "cached", "completion", "savings")
    assert [tuple(r[f] for f in fields) for r in have] == [
        tuple(r[f] for f in fields) for r in want
    ]
    _assert_summary_matches_rows(org)
    assert selectors.filter_choices(organisation_id=org) == selectors.activity_filter_choices(
        organisation_id=org
    )
    # Keys and the staff spend report: compared with sums of the rows themselves.
    since = selectors.month_start(NOW)
    for key in selectors.api_key_list(organisation_id=org, now=NOW):
        rows = Activity.unscoped_objects.filter(api_key=key)
        assert key.calls_total == rows.count()
        assert _n(key.spend_total) == _n(sum((r.cost_usd for r in rows), D(0)))
        assert _n(key.spend_month) == _n(
            sum((r.cost_usd for r in rows if r.created_at >= since), D(0))
        )
    last_month = selectors.month_start(since - timedelta(days=1))
    for organisation in selectors.unscoped_organisation_spend(now=NOW):
        rows = list(Activity.unscoped_objects.filter(organisation=organisation))
        assert organisation.calls == len(rows)
        assert _n(organisation.spend_total) == _n(sum((r.cost_usd for r in rows), D(0)))
        assert _n(organisation.spend_month) == _n(
            sum((r.cost_usd for r in rows if r.created_at >= since), D(0))
        )
        assert _n(organisation.spend_last_month) == _n(
            sum((r.cost_usd for r in rows if last_month <= r.created_at < since), D(0))
        )
        assert organisation.last_call_at == max((r.created_at for r in rows), default=None)


SUMMARY_RANGES = [
    (NOW - timedelta(days=60), NOW),  # across months, through today (recent rows)
    (NOW - timedelta(days=365), NOW),  # the whole history, a year-long chart
    (NOW - timedelta(days=90), NOW - timedelta(days=30)),  # rolled days only
    (NOW - timedelta(days=1), NOW + timedelta(days=2)),  # the rolled edge and after
    (NOW + timedelta(days=1), NOW + timedelta(days=3)),  # no call at all
]


def _assert_summary_matches_rows(org: int) -> None:
    """The Usage page's one summary read: every figure equal to the row-by-row reads."""
    fields = ("calls", "cost", "prompt", "cached", "completion", "savings")
    for start, end in SUMMARY_RANGES:
        date_from, date_to = start.date(), end.date()
        raw = _raw(org, ActivityFilters(date_from=date_from, date_to=date_to))
        got = selectors.usage_summary(organisation_id=org, date_from=date_from, date_to=date_to)
        expected = selectors.activity_totals(raw)
        for name in (*fields, "estimated"):
            assert _n(got["totals"][name]) == _n(expected[name]), (date_from, name)
        want = selectors.usage_per_day(raw, date_from=date_from, date_to=date_to)
        assert [_n(tuple(r[f] for f in ("day", *fields))) for r in got["per_day"]] == [
            _n(tuple(r[f] for f in ("day", *fields))) for r in want
        ], date_from
        have = selectors.usage_days(organisation_id=org, date_from=date_from, date_to=date_to)
        assert [_n(tuple(r[f] for f in ("day", *fields))) for r in have] == [
            _n(tuple(r[f] for f in ("day", *fields))) for r in want
        ], date_from
        for name, old, label in (
            ("per_model", selectors.usage_per_model, "model_slug"),
            ("per_provider", selectors.usage_per_provider, "provider_slug"),
            ("per_key", selectors.usage_per_key, "api_key_id"),
        ):
            want = [(r[label], _n(tuple(r[f] for f in fields))) for r in old(raw)]
            assert [(r[label], _n(tuple(r[f] for f in fields))) for r in got[name]] == want, (
                date_from,
                name,
            )
        names = {r["api_key_id"]: r["api_key__name"] for r in selectors.usage_per_key(raw)}
        assert {r["api_key_id"]: r["api_key__name"] for r in got["per_key"]} == names


def test_reads_without_rollups_are_the_rows(ledger):
    assert rollup_through_day() is None
    _assert_reads_match_rows(*ledger)


def test_reads_from_rollups_match_the_rows(ledger):
    a, b = ledger
    rolled = rollup_refresh(now=NOW)
    # Rolled: from the first seeded day through the last final day (the day before
    # yesterday's settle bound), not today, whose rows are still read one by one.
    assert rolled[-1] == last_final_day(NOW) == NOW.date() - timedelta(days=1)
    assert rollup_through_day() == rolled[-1]
    assert UsageDaily.unscoped_objects.filter(organisation=a.organisation).exists()
    assert TtftDaily.unscoped_objects.filter(organisation=a.organisation).exists()
    assert not UsageDaily.unscoped_objects.filter(day__gte=NOW.date()).exists()
    # Whole months are summed into monthly rows: December to February here.
    assert rollup_months_through() == NOW.date().replace(month=2, day=1)
    months = set(UsageDaily.unscoped_objects.filter(monthly=True).values_list("day", flat=True))
    assert NOW.date().replace(month=1, day=1) in months
    assert TtftDaily.unscoped_objects.filter(monthly=True).exists()
    _assert_reads_match_rows(a, b)


def test_a_monthly_row_is_what_is_read_for_a_whole_month(ledger):
    a, _ = ledger
    rollup_refresh(now=NOW)
    january = ActivityFilters(
        date_from=NOW.date().replace(month=1, day=1), date_to=NOW.date().replace(month=1, day=31)
    )
    org = a.organisation.id
    before = selectors.usage_totals(organisation_id=org, filters=january)
    UsageDaily.unscoped_objects.filter(organisation_id=org, monthly=False, day__month=1).update(
        calls=0
    )
    assert selectors.usage_totals(organisation_id=org, filters=january) == before
    # A range starting mid-month reads that month's days, not its monthly row.
    mid = ActivityFilters(date_from=NOW.date().replace(month=1, day=2), date_to=january.date_to)
    assert selectors.usage_totals(organisation_id=org, filters=mid)["calls"] == 0
    # A correction of the days rebuilds the month too.
    rollup_rebuild(date_from=january.date_from, date_to=january.date_to)
    assert _n(selectors.usage_totals(organisation_id=org, filters=mid)["calls"]) > 0
    after = selectors.usage_totals(organisation_id=org, filters=january)
    assert _n(tuple(after.values())) == _n(tuple(before.values()))


def _month_to_date_days() -> set:
    days = set()
    for model in (UsageDaily, TtftDaily):
        rows = model.unscoped_objects.filter(monthly=True).exclude(day__day=1)
        days |= set(rows.values_list("day", flat=True))
    return days


def test_month_to_date_rows_are_read_and_match_the_rows(ledger):
    """The month in progress up to the last rolled day is one set of monthly rows
    (``day`` = that last day): its sums and TTFT percentiles are those of the rows; a new
    day replaces them, the generation before is kept for a read that saw the previous
    state, older ones go; a whole month leaves none behind."""
    a, b = ledger
    org = a.organisation.id
    rollup_refresh(now=NOW)
    through = rollup_through_day()
    state = UsageRollupState.objects.get()
    assert state.month_to_date == through == NOW.date() - timedelta(days=1)
    assert _month_to_date_days() == {through}
    # The TTFT percentiles of a range ending on the last rolled day come from those rows
    # (change one: the read changes) and equal the raw computation (rounded values).
    since = ActivityFilters(date_from=through.replace(day=1) - timedelta(days=40))
    rows = TtftDaily.unscoped_objects.filter(organisation_id=org, monthly=True, day=through)
    assert rows.exists()
    assert _flat_ttft(selectors.usage_ttft(organisation_id=org, filters=since)) == (
        _expected_ttft(_raw(org, since))
    )
    first = rows.order_by("id").first()
    TtftDaily.unscoped_objects.filter(id=first.id).update(calls=F("calls") + 100_000)
    changed = _flat_ttft(selectors.usage_ttft(organisation_id=org, filters=since))
    assert changed[(first.provider_slug, first.prompt_bucket)]["calls"] == (
        _expected_ttft(_raw(org, since))[(first.provider_slug, first.prompt_bucket)]["calls"]
        + 100_000
    )
    rollup_rebuild(date_from=through, date_to=through)  # puts it right
    assert _flat_ttft(selectors.usage_ttft(organisation_id=org, filters=since)) == (
        _expected_ttft(_raw(org, since))
    )
    # The next day: new rows, the previous generation kept, and a read of either state
    # gives the rows' figures.
    rollup_refresh(now=NOW + timedelta(days=1))
    assert _month_to_date_days() == {through, through + timedelta(days=1)}
    _assert_reads_match_rows(a, b)
    UsageRollupState.objects.update(through_day=through, month_to_date=through)
    _assert_reads_match_rows(a, b)
    rollup_refresh(now=NOW + timedelta(days=1))
    rollup_refresh(now=NOW + timedelta(days=2))
    assert _month_to_date_days() == {through + timedelta(days=1), through + timedelta(days=2)}
    # The month completes: its whole-month rows are read (none to date on the 1st), then
    # the next month's; none of the month before remain.
    next_month = (NOW.replace(day=28) + timedelta(days=5)).replace(day=2)
    rollup_refresh(now=next_month)
    assert rollup_months_through() == NOW.date().replace(day=1)
    assert UsageRollupState.objects.get().month_to_date is None
    _assert_reads_match_rows(a, b)
    rollup_refresh(now=next_month + timedelta(days=1))
    assert UsageRollupState.objects.get().month_to_date == next_month.date()
    assert _month_to_date_days() <= {next_month.date()}  # (no call in April here)
    _assert_reads_match_rows(a, b)


def test_a_run_past_two_month_ends_never_reads_the_kept_generation_as_a_month(ledger):
    """Rolled on 13 January, then (beat down) on 14 March: January and February become
    whole months, so January's month-to-date rows (the generation before) go: a range
    over both months reads each day once."""
    a, b = ledger
    rollup_refresh(now=NOW - timedelta(days=60))
    january = UsageRollupState.objects.get().month_to_date
    assert january.month == 1
    _assert_reads_match_rows(a, b)
    rollup_refresh(now=NOW)
    assert rollup_months_through() == NOW.date().replace(month=2, day=1)
    assert _month_to_date_days() == {NOW.date() - timedelta(days=1)}
    _assert_reads_match_rows(a, b)


def test_a_rollup_is_what_is_read(ledger):
    """Fails if the reads ignored the rollups: change a rolled day's row in the rollup only."""
    a, _ = ledger
    rollup_refresh(now=NOW)
    org = a.organisation.id
    before = selectors.usage_totals(organisation_id=org)
    through = rollup_through_day()
    # A day of the month still open (whole months are read from their monthly rows, the
    # open month up to the last rolled day from its month-to-date rows): read for a range
    # that ends the day before.
    open_days = ActivityFilters(
        date_from=through.replace(day=1), date_to=through - timedelta(days=1)
    )
    before_open = selectors.usage_totals(organisation_id=org, filters=open_days)
    row = UsageDaily.unscoped_objects.filter(
        organisation=a.organisation,
        monthly=False,
        day__gte=through.replace(day=1),
        day__lt=through,
    ).first()
    UsageDaily.unscoped_objects.filter(id=row.id).update(calls=row.calls + 1000)
    assert selectors.usage_totals(organisation_id=org, filters=open_days)["calls"] == (
        before_open["calls"] + 1000
    )
    # The month to date: what a range ending on the last rolled day reads.
    to_date = UsageDaily.unscoped_objects.filter(
        organisation=a.organisation, monthly=True, day=through
    )
    to_date.filter(id=to_date.first().id).update(calls=F("calls") + 7)
    assert selectors.usage_totals(organisation_id=org)["calls"] == before["calls"] + 7
    # ...and a rebuild puts both right (idempotent: twice is the same).
    rollup_rebuild(date_from=row.day, date_to=row.day)
    rollup_day(row.day)
    after = selectors.usage_totals(organisation_id=org)
    assert _n(tuple(after.values())) == _n(tuple(before.values()))
    after = selectors.usage_totals(organisation_id=org, filters=open_days)
    assert _n(tuple(after.values())) == _n(tuple(before_open.values()))


def test_day_totals_are_the_daily_rows_summed_and_are_read(ledger):
    a, _ = ledger
    rollup_refresh(now=NOW)
    org = a.organisation.id
    totals = UsageDayTotal.unscoped_objects.filter(organisation_id=org).order_by("day")
    assert totals.count() == (
        UsageDaily.unscoped_objects.filter(organisation_id=org, monthly=False)
        .values("day")
        .distinct()
        .count()
    )
    # What migration 0012 builds from the daily rows is what rollup_day built.
    fields = (
        "organisation_id",
        "day",
        "calls",
        "cost_usd",
        "prompt_tokens",
        "estimated",
        "cost_with_list_usd",
        "cheapest_cost_usd",
    )
    rebuilt = sorted(
        (_n(tuple(getattr(r, f) for f in fields)) for r in day_totals(UsageDaily, UsageDayTotal)),
        key=repr,
    )
    assert rebuilt == sorted(
        (_n(tuple(r.values())) for r in UsageDayTotal.unscoped_objects.values(*fields)), key=repr
    )
    # The per-day chart reads them (change one, the chart changes), then a rebuild of the
    # day puts it right.
    row = totals.filter(day__lt=NOW.date()).last()
    date_from = row.day - timedelta(days=3)
    before = selectors.usage_days(organisation_id=org, date_from=date_from, date_to=NOW.date())
    UsageDayTotal.unscoped_objects.filter(id=row.id).update(calls=row.calls + 1000)
    for got in (
        selectors.usage_days(organisation_id=org, date_from=date_from, date_to=NOW.date()),
        selectors.usage_summary(organisation_id=org, date_from=date_from, date_to=NOW.date())[
            "per_day"
        ],
    ):
        changed = [d for d, b in zip(got, before, strict=True) if d["calls"] != b["calls"]]
        assert [(d["day"], d["calls"]) for d in changed] == [(row.day, row.calls + 1000)]
    rollup_rebuild(date_from=row.day, date_to=row.day)
    after = selectors.usage_days(organisation_id=org, date_from=date_from, date_to=NOW.date())
    assert [(d["day"], d["calls"], _n(d["cost"])) for d in after] == [
        (d["day"], d["calls"], _n(d["cost"])) for d in before
    ]


def test_refresh_rolls_only_new_final_days(ledger):
    rollup_refresh(now=NOW - timedelta(days=10))
    through = rollup_through_day()
    assert through == (NOW - timedelta(days=11)).date()
    assert rollup_refresh(now=NOW - timedelta(days=10)) == []
    # A day ends final only after the reconciler's bound + margin past its midnight.
    almost = datetime.combine(through + timedelta(days=2), datetime.min.time(), tzinfo=UTC)
    settle = timedelta(seconds=settings.UBERLLM["RECONCILE_AFTER_S"]) + SETTLE_MARGIN
    assert rollup_refresh(now=almost + settle - timedelta(minutes=1)) == []
    next_day = through + timedelta(days=1)
    assert rollup_refresh(now=almost + settle + timedelta(minutes=1)) == [next_day]
    # ... and none of its calls is still running (a long call heartbeating past midnight).
    a, _ = ledger
    pending_day = next_day + timedelta(days=1)
    Activity.objects.create(
        request_id="gen-still-running",
        organisation=a.organisation,
        api_key=a.api_key,
        model_slug="m",
        created_at=datetime.combine(pending_day, datetime.min.time(), tzinfo=UTC),
        heartbeat_at=NOW - timedelta(seconds=10),
    )
    assert rollup_refresh(now=NOW) == []
    Activity.unscoped_objects.filter(request_id="gen-still-running").update(status="error")
    assert len(rollup_refresh(now=NOW, max_days=3)) == 3


def test_pages_show_the_rolled_figures(ledger):
    a, _ = ledger
    rollup_refresh(now=NOW)
    client = Client()
    client.force_login(a.user)
    response = client.get("/", {"status": "success"})
    raw = _raw(a.organisation.id, ActivityFilters(status="success"))
    assert response.context["totals"]["calls"] == raw.count()
    assert response.context["page"].paginator.count == raw.count()
    assert response.context["page"].paginator.num_pages == math.ceil(raw.count() / 50)
    assert len(response.context["page"].object_list) == 50
    assert "deepseek/v4" in dict(response.context["form"].fields["model"].choices)
    usage = client.get("/usage/", {"date_from": "2026-01-01", "date_to": "2026-03-15"})
    assert usage.status_code == 200
    raw = _raw(
        a.organisation.id,
        ActivityFilters(date_from=NOW.date().replace(month=1, day=1), date_to=NOW.date()),
    )
    assert _n(usage.context["totals"]["cost"]) == _n(selectors.activity_totals(raw)["cost"])


def test_seed_activity_spreads_rows(ledger):
    a, _ = ledger
    rows = Activity.unscoped_objects.filter(
        organisation=a.organisation, request_id__startswith="seed-"
    )
    assert rows.count() == 1500
    assert rows.values("model_slug").distinct().count() >= 5
    assert rows.values("provider_slug").distinct().count() >= 4
    assert rows.values("api_key_id").distinct().count() == 3
    assert set(rows.values_list("status", flat=True)) == {"success", "error", "cancelled"}
    oldest = rows.order_by("created_at").first().created_at
    assert NOW - oldest > timedelta(days=110)  # 4 months of 30 days
    assert all(a.attempts.count() == 1 for a in rows.order_by("?")[:5])


def test_seed_and_timings_commands(ledger):
    a, _ = ledger
    rollup_refresh(now=NOW)
    out = io.StringIO()
    call_command("seed_activity", organisation="cmd-org", rows=300, months=13, stdout=out)
    assert "seeded 300 rows for cmd-org" in out.getvalue()
    assert Activity.unscoped_objects.filter(organisation__slug="cmd-org").count() == 300
    # The seeded days already rolled were rebuilt: the rolled totals still match.
    org = Activity.unscoped_objects.filter(organisation__slug="cmd-org").first().organisation_id
    assert selectors.usage_totals(organisation_id=org)["calls"] == 300
    out = io.StringIO()
    call_command("activity_timings", organisation=a.organisation.slug, runs=1, stdout=out)
    text = out.getvalue()
    for name in (
        "activity: first page (50)",
        "usage: 30 days",
        "api /v1/activity: cursor page 2",
        "admin spend page",
        "csv export",
    ):
        assert name in text
