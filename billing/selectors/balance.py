"""What a key and its organisation spent, by period: OpenRouter's ``/key`` and
``/credits`` (routing/key_views.py). All time comes from the daily rollups and the rows
after them; today and this week (from Monday, UTC) from the rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from ..models import Organisation
from .common import month_start
from .keys import api_key_list
from .spend import spend_annotations, spend_since


def _day_and_week(now: datetime) -> tuple[datetime, datetime]:
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day, day - timedelta(days=day.weekday())


def api_key_usage(
    *, organisation_id: int, api_key_id: int, now: datetime | None = None
) -> dict[str, Decimal | str]:
    """One key's ``name`` and spend: ``total`` (all time), ``month``, ``week``, ``day``
    (UTC calendar periods). Zero for a key of another organisation."""
    now = now or datetime.now(UTC)
    row = (
        api_key_list(organisation_id=organisation_id, now=now)
        .filter(id=api_key_id)
        .values("name", "spend_total", "spend_month")
        .first()
    ) or {"name": "", "spend_total": 0, "spend_month": 0}
    day, week = _day_and_week(now)
    spent = {"organisation_id": organisation_id, "api_key_id": api_key_id}
    return {
        "name": row["name"],
        "total": Decimal(row["spend_total"] or 0),
        "month": Decimal(row["spend_month"] or 0),
        "week": spend_since(**spent, since=week),
        "day": spend_since(**spent, since=day),
    }


def organisation_usage(*, organisation_id: int, now: datetime | None = None) -> dict[str, Decimal]:
    """The organisation's spend: ``total`` (all time), ``month`` and ``day`` (UTC)."""
    now = now or datetime.now(UTC)
    annotations = spend_annotations("organisation_id", since=month_start(now))
    row = (
        Organisation.objects.filter(id=organisation_id)
        .annotate(**annotations)
        .values("spend_total", "spend_month")
        .first()
    ) or {"spend_total": 0, "spend_month": 0}
    day, _ = _day_and_week(now)
    return {
        "total": Decimal(row["spend_total"] or 0),
        "month": Decimal(row["spend_month"] or 0),
        "day": spend_since(organisation_id=organisation_id, api_key_id=None, since=day),
    }
