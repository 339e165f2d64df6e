"""Credits and monthly statements (issue 42): the statement equals the ledger to the
cent across 10,000 calls, CSV and page agree, operators top up in the admin."""

from __future__ import annotations

import csv
import io
import random
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import Client

from billing import selectors
from billing.models import Activity, CreditEntry, Organisation
from billing.services import credit_entry_create

from ..support import make_tenant

pytestmark = pytest.mark.django_db
MONTH = datetime(2025, 3, 1, tzinfo=UTC)
STATUSES = ("success", "success", "success", "error", "cancelled")


def _cents(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"))


def _seed(organisation, n: int, start: datetime, span_s: int, rng: random.Random) -> list:
    """``n`` finished calls in [start, start + span_s), random exact costs; about 1 in 5
    cancelled (billed what it delivered, sometimes $0), 1 in 7 hedged."""
    rows = []
    for i in range(n):
        status = rng.choice(STATUSES)
        cost = Decimal(rng.randrange(0, 5_000_000)) / Decimal(10**10)
        if status == "error":
            cost = Decimal(0)
        rows.append(
            Activity(
                request_id=f"gen-{organisation.id}-{start:%Y%m%d}-{i}",
                organisation=organisation,
                model_slug=rng.choice(("acme/fast", "acme/smart", "other/m")),
                provider_slug="alpha",
                status=status,
                cost_usd=cost,
                hedged=i % 7 == 0,
                hedge_cost_usd=cost if i % 7 == 0 else 0,
                list_cost_usd=cost * 3 if i % 2 else None,
                cheapest_cost_usd=cost / 2 or None,
                created_at=start + timedelta(seconds=rng.randrange(span_s)),
            )
        )
    Activity.objects.for_organisation(organisation).bulk_create(rows, batch_size=2000)
    return rows


def test_statement_equals_the_ledger_to_the_cent_across_10000_calls():
    tenant = make_tenant("Acme")
    org = tenant.organisation
    rng = random.Random(42)
    before = _seed(org, 500, MONTH - timedelta(days=20), 19 * 86400, rng)
    month = _seed(org, 10_000, MONTH, 31 * 86400 - 1, rng)
    _seed(org, 300, MONTH + timedelta(days=31), 86400, rng)  # April: not in March
    other = make_tenant("Other").organisation
    _seed(other, 200, MONTH, 86400, rng)  # another organisation: never counted
    credit_entry_create(
        organisation=org, amount_usd=Decimal("5"), created_at=MONTH - timedelta(days=2)
    )
    credit_entry_create(
        organisation=org, amount_usd=Decimal("10.5"), created_at=MONTH + timedelta(days=3)
    )
    credit_entry_create(
        organisation=org,
        amount_usd=Decimal("-0.25"),
        kind="adjustment",
        created_at=MONTH + timedelta(days=4),
    )

    statement = selectors.monthly_statement(organisation_id=org.id, month=MONTH.date())

    spend = sum((r.cost_usd for r in month), Decimal(0))
    assert statement.calls == 10_000
    assert _cents(statement.spend) == _cents(spend)
    assert abs(statement.spend - spend) < Decimal("1e-9")  # exact on PostgreSQL
    assert statement.cancelled == sum(r.status == "cancelled" for r in month) > 0
    assert statement.hedged == sum(r.hedged for r in month) > 0
    listed = [r for r in month if r.list_cost_usd is not None]
    saved = sum((r.list_cost_usd - r.cost_usd for r in listed), Decimal(0))
    assert _cents(statement.savings.vs_list) == _cents(saved)
    assert statement.topups == Decimal("10.5") and statement.adjustments == Decimal("-0.25")
    opening = Decimal(5) - sum((r.cost_usd for r in before), Decimal(0))
    assert _cents(statement.opening_balance) == _cents(opening)
    assert _cents(statement.closing_balance) == _cents(opening + Decimal("10.25") - spend)
    per_model = sum((m["cost"] for m in statement.per_model), Decimal(0))
    assert _cents(per_model) == _cents(spend)
    assert sum(m["calls"] for m in statement.per_model) == 10_000


def _csv_lines(client: Client, month: str) -> dict[str, str]:
    reply = client.get(f"/statement.csv?month={month}")
    assert reply.status_code == 200 and reply["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(reply.content.decode())))
    summary = rows[1 : rows.index([])]
    return dict(summary)


def test_csv_matches_the_page():
    tenant = make_tenant("Acme")
    _seed(tenant.organisation, 300, MONTH, 20 * 86400, random.Random(7))
    credit_entry_create(
        organisation=tenant.organisation,
        amount_usd=Decimal("2"),
        created_at=MONTH + timedelta(days=1),
        note="March top-up",
    )
    client = Client()
    client.force_login(tenant.user)
    page = client.get("/statement/?month=2025-03")
    assert page.status_code == 200
    html = page.content.decode()
    shown = dict(re.findall(r'<tr id="line-([a-z_]+)">.*?data-exact="([^"]*)"', html))
    lines = _csv_lines(client, "2025-03")
    assert lines.pop("month") == "2025-03"
    assert shown == lines and len(shown) == 10
    assert lines["topups_usd"] == "2" and lines["calls"] == "300"
    assert "March top-up" in html


def test_a_statement_shows_only_its_own_organisation():
    acme, other = make_tenant("Acme"), make_tenant("Other")
    _seed(other.organisation, 50, MONTH, 86400, random.Random(1))
    client = Client()
    client.force_login(acme.user)
    assert _csv_lines(client, "2025-03")["calls"] == "0"


def test_operators_top_up_in_the_admin_and_entries_are_append_only():
    from django.contrib.auth import get_user_model

    tenant = make_tenant("Acme")
    operator = get_user_model().objects.create_superuser("op", "op@example.com", "pw-12345678")
    client = Client()
    client.force_login(operator)
    add = "/admin/billing/creditentry/add/"
    form = {"organisation": tenant.organisation.id, "kind": "topup", "note": "wire 1"}
    assert client.post(add, {**form, "amount_usd": "-3"}).status_code == 200  # refused
    assert client.post(add, {**form, "amount_usd": "25.50"}).status_code == 302
    entry = CreditEntry.objects.for_organisation(tenant.organisation).get()
    assert entry.amount_usd == Decimal("25.50") and entry.created_by == "op"
    assert Organisation.objects.get(id=tenant.organisation.id).credit_total_usd == Decimal("25.5")
    change = f"/admin/billing/creditentry/{entry.id}/change/"
    assert client.post(change, {**form, "amount_usd": "1000"}).status_code == 403
    assert (
        client.post(f"/admin/billing/creditentry/{entry.id}/delete/", {"post": "yes"}).status_code
        == 403
    )
    entry.refresh_from_db()
    assert entry.amount_usd == Decimal("25.50")
