"""Spend of one organisation or key: for limits, alerts, and the per-row spend columns
of the keys page and the staff report (from the daily rollups and the rows after them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db.models import (
    Count,
    DecimalField,
    IntegerField,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce

from ..models import Activity, SpendAlert, UsageDaily
from ..rollups import rolled_rows, rollup_state
from .common import day_start, month_start

_USD = DecimalField(max_digits=24, decimal_places=10)
_CALLS = IntegerField()


def spend_since(*, organisation_id: int, api_key_id: int | None, since: datetime) -> Decimal:
    """What an organisation (or one of its keys) spent from ``since`` on, as a Decimal
    (seeds a spend budget's period, billing.limits)."""
    rows = Activity.objects.for_organisation(organisation_id).filter(created_at__gte=since)
    if api_key_id is not None:
        rows = rows.filter(api_key_id=api_key_id)
    total = rows.order_by().aggregate(total=Sum("cost_usd"))["total"]
    return Decimal(total or 0)


def api_key_month_spend(
    *, organisation_id: int, api_key_id: int, now: datetime | None = None
) -> Decimal:
    """What one key spent this calendar month (UTC), as a Decimal."""
    return spend_since(
        organisation_id=organisation_id, api_key_id=api_key_id, since=month_start(now)
    )


def spend_alerts_recent(*, organisation_id: int, since: datetime) -> QuerySet:
    """The organisation's spend alerts raised from ``since`` on, newest first."""
    return SpendAlert.objects.for_organisation(organisation_id).filter(created_at__gte=since)


@dataclass(frozen=True, slots=True)
class _OuterRowSpend:
    """Correlated subqueries of the outer row's calls and spend (``field`` is the
    outer row's pk): its rollup rows, and its Activity rows after the rolled days."""

    field: str
    rolled: QuerySet  # UsageDaily
    recent: QuerySet  # Activity
    through: date | None
    months_through: date | None
    month_to_date: date | None

    @classmethod
    def of(cls, field: str) -> _OuterRowSpend:

        through, months_through, month_to_date = rollup_state()
        rolled = UsageDaily.objects.correlated(field)
        recent = Activity.objects.correlated(field)
        if through is None:
            rolled = rolled.none()
        else:
            recent = recent.filter(created_at__gte=day_start(through + timedelta(days=1)))
        return cls(field, rolled, recent, through, months_through, month_to_date)

    def _rolled_days(self, start: date | None, end: date | None = None) -> Q:
        """Rollup rows of [start, end) within the rolled days."""

        if self.through is None:
            return Q()
        last = min(end - timedelta(days=1), self.through) if end else self.through
        return rolled_rows(start, last, self.months_through, self.month_to_date)

    def _total(self, queryset: QuerySet, value: Sum | Count, output: DecimalField | IntegerField):
        sub = queryset.order_by().values(self.field).annotate(v=value).values("v")[:1]
        return Coalesce(Subquery(sub, output_field=output), Value(0), output_field=output)

    def spend(self, start: datetime | None, end: datetime | None = None) -> Coalesce:
        days = self._rolled_days(start and start.date(), end and end.date())
        rows = Q()
        if start:
            rows &= Q(created_at__gte=start)
        if end:
            rows &= Q(created_at__lt=end)
        rolled = self._total(self.rolled.filter(days), Sum("cost_usd"), _USD)
        return rolled + self._total(self.recent.filter(rows), Sum("cost_usd"), _USD)

    def calls(self) -> Coalesce:
        rolled = self._total(self.rolled.filter(self._rolled_days(None)), Sum("calls"), _CALLS)
        return rolled + self._total(self.recent, Count("id"), _CALLS)


def spend_annotations(
    field: str, *, since: datetime, previous: datetime | None = None
) -> dict[str, Coalesce]:
    """Per-row subqueries (``field`` = OuterRef("pk")) of calls and spend: ``calls``/
    ``calls_total``, ``spend_total``, ``spend_month`` (from ``since``) and, with
    ``previous``, ``spend_last_month`` (from ``previous`` to ``since``)."""
    outer = _OuterRowSpend.of(field)
    annotations = {"spend_total": outer.spend(None), "spend_month": outer.spend(since)}
    if previous is None:
        return {**annotations, "calls_total": outer.calls()}
    return {
        **annotations,
        "calls": outer.calls(),
        "spend_last_month": outer.spend(previous, since),
    }
