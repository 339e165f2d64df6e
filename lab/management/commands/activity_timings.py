"""Time every dashboard and API read an organisation owner triggers, at its volume:
``activity_timings --organisation acme [--runs 5] [--explain] [--pages]``.

Prints one line per read: median and slowest of ``--runs`` warm runs (ms) and the SQL
statements it ran. ``--explain`` prints PostgreSQL's ``EXPLAIN (ANALYZE, BUFFERS)`` of
each statement; ``--pages`` also times the whole pages through Django's test client
(rendering included) as an owner (a user ``timings-owner`` is added to the
organisation). The figures of docs/operations.md ("Activity at 10 million rows") come
from this command."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import selectors
from billing.models import Activity, ApiKey, Organisation
from billing.selectors import ActivityFilters


def reads(organisation: Organisation) -> list[tuple[str, Callable[[], object]]]:
    """The reads of the Activity, Usage, Keys and admin spend pages and the activity API."""
    org = organisation.id
    today = datetime.now(UTC).date()
    last = Activity.objects.for_organisation(org).order_by("-created_at", "-id").first()
    some_key = ApiKey.objects.for_organisation(org).order_by("id").first()
    model = last.model_slug if last else ""
    week = ActivityFilters(date_from=today - timedelta(days=6), date_to=today)
    month = ActivityFilters(date_from=today - timedelta(days=29), date_to=today)
    year = ActivityFilters(date_from=today - timedelta(days=365), date_to=today)

    def first_page(filters: ActivityFilters | None = None, n: int = 50):
        queryset = selectors.activity_list(organisation_id=org, filters=filters)
        return list(queryset[:n])

    def api_page(after=None):
        queryset = selectors.activity_list(organisation_id=org, filters=ActivityFilters())
        return selectors.activity_page_after(queryset, after=after, limit=100)

    def api_second_page():
        rows, _ = api_page()
        return api_page(after=(rows[-1].created_at, rows[-1].id) if rows else None)

    def csv_start():
        queryset = selectors.activity_list(organisation_id=org, filters=ActivityFilters())
        rows = selectors.activity_csv_rows(queryset)
        return [next(rows, None) for _ in range(2000)]

    def usage(filters: ActivityFilters):
        scope = {"organisation_id": org, "filters": filters}
        # What the Usage page reads: the five sums in one summary, then the TTFTs.
        return (
            selectors.usage_summary(
                organisation_id=org, date_from=filters.date_from, date_to=filters.date_to
            ),
            selectors.usage_ttft(**scope),
        )

    def usage_days(filters: ActivityFilters):
        return selectors.usage_days(
            organisation_id=org, date_from=filters.date_from, date_to=filters.date_to
        )

    key_filter = ActivityFilters(api_key_id=some_key.id if some_key else None)
    return [
        ("activity: filter menus", lambda: selectors.filter_choices(organisation_id=org)),
        ("activity: first page (50)", lambda: first_page()),
        ("activity: totals (all time)", lambda: selectors.usage_totals(organisation_id=org)),
        ("activity: page, model filter", lambda: first_page(ActivityFilters(model=model))),
        (
            "activity: totals, model filter",
            lambda: selectors.usage_totals(
                organisation_id=org, filters=ActivityFilters(model=model)
            ),
        ),
        (
            "activity: page, status=cancelled",
            lambda: first_page(ActivityFilters(status="cancelled")),
        ),
        ("activity: page, key filter", lambda: first_page(key_filter)),
        (
            "activity: totals, key filter",
            lambda: selectors.usage_totals(organisation_id=org, filters=key_filter),
        ),
        ("activity: page, last 7 days", lambda: first_page(week)),
        (
            "activity: totals, last 7 days",
            lambda: selectors.usage_totals(organisation_id=org, filters=week),
        ),
        (
            "activity: request id",
            lambda: first_page(ActivityFilters(request_id=last.request_id if last else "none")),
        ),
        (
            "activity: one call's detail (with its attempts)",
            lambda: (
                selectors.activity_get(
                    organisation_id=org, request_id=last.request_id
                ).attempts.all()
                if last
                else None
            ),
        ),
        ("usage: 30 days (totals, day, model, provider, key, TTFT p50/p90)", lambda: usage(month)),
        (
            "usage: TTFT p50/p90 only, 30 days",
            lambda: selectors.usage_ttft(organisation_id=org, filters=month),
        ),
        ("usage: 366 days (all six)", lambda: usage(year)),
        ("usage: per-day chart only, 366 days", lambda: usage_days(year)),
        ("csv export: first 2,000 rows", csv_start),
        ("api /v1/activity: first page (100)", lambda: api_page()),
        ("api /v1/activity: cursor page 2", api_second_page),
        (
            "keys page: spend month/total per key",
            lambda: list(selectors.api_key_list(organisation_id=org)),
        ),
        (
            "admin spend page: every organisation",
            lambda: list(selectors.unscoped_organisation_spend().order_by("-spend_month", "slug")),
        ),
    ]


def measure(func: Callable[[], object], runs: int) -> tuple[float, float, float, list[str]]:
    """Median, min and max wall ms over ``runs`` warm runs, and the SQL of one run (the
    min is the run least disturbed by other processes on a shared machine)."""
    with CaptureQueriesContext(connection) as captured:
        func()  # warm-up (and the statements)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        times.append((time.perf_counter() - started) * 1000)
    return (
        statistics.median(times),
        min(times),
        max(times),
        [q["sql"] for q in captured.captured_queries],
    )


class Command(BaseCommand):
    help = "Time the dashboard/API reads of one organisation (docs/operations.md)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--organisation", required=True, help="slug")
        parser.add_argument("--runs", type=int, default=5)
        parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE (PostgreSQL)")
        parser.add_argument("--pages", action="store_true", help="also time whole pages")
        parser.add_argument("--only", default="", help="only reads whose name contains this")

    def handle(self, *args, **options) -> None:
        organisation = Organisation.objects.filter(slug=options["organisation"]).first()
        if organisation is None:
            raise CommandError(f"no organisation {options['organisation']!r}")
        rows = Activity.objects.for_organisation(organisation).count()
        everyone = Activity.unscoped_objects.count()
        self.stdout.write(
            f"{organisation.slug}: {rows:,} Activity rows ({everyone:,} in all), "
            f"{connection.vendor}, {options['runs']} runs each\n"
        )
        self.stdout.write(f"{'read':<66} {'median ms':>9} {'min ms':>8} {'max ms':>8} {'SQL':>4}")
        for name, func in reads(organisation):
            if options["only"] and options["only"] not in name:
                continue
            median, fastest, slowest, sqls = measure(func, options["runs"])
            self.stdout.write(
                f"{name:<66} {median:>9.1f} {fastest:>8.1f} {slowest:>8.1f} {len(sqls):>4}"
            )
            if options["explain"] and connection.vendor == "postgresql":
                for sql in sqls:
                    with connection.cursor() as cursor:
                        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
                        plan = "\n    ".join(r[0] for r in cursor.fetchall())
                    self.stdout.write(f"  {sql[:300]}\n    {plan}\n")
        if options["pages"]:
            self._pages(organisation, options["runs"])

    def _pages(self, organisation: Organisation, runs: int) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client
        from django.test.utils import override_settings

        from billing.models import Membership

        user, _ = get_user_model().objects.get_or_create(username="timings-owner")
        Membership.objects.for_organisation(organisation).get_or_create(
            organisation=organisation, user=user, defaults={"role": "owner"}
        )
        client = Client()
        client.force_login(user)
        today = datetime.now(UTC).date()
        pages = [
            ("page: / (activity)", "/"),
            ("page: /?status=error (activity)", "/?status=error"),
            ("page: /usage/ (30 days)", "/usage/"),
            ("page: /usage/ (366 days)", f"/usage/?date_from={today - timedelta(days=365)}"),
            ("page: /keys/", "/keys/"),
        ]
        with override_settings(ALLOWED_HOSTS=["*"], SECURE_SSL_REDIRECT=False):
            for name, url in pages:

                def get(url=url):
                    response = client.get(url)
                    if response.status_code != 200:
                        raise CommandError(f"{url}: {response.status_code}")

                median, fastest, slowest, sqls = measure(get, runs)
                self.stdout.write(
                    f"{name:<66} {median:>9.1f} {fastest:>8.1f} {slowest:>8.1f} {len(sqls):>4}"
                )
