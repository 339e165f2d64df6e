"""The monthly statement (docs/dashboard.md, "Credits and statements"): one page and its
CSV, both built from the same lines so they cannot disagree."""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import selectors
from ..money import decimal_str
from .common import organisation_required


def _month(request: HttpRequest) -> date:
    """``?month=YYYY-MM`` (default: this UTC month); a bad value is this month."""
    today = datetime.now(UTC).date().replace(day=1)
    try:
        return datetime.strptime(request.GET.get("month", ""), "%Y-%m").date()
    except ValueError:
        return today


def _optional(value) -> str:
    return "" if value is None else decimal_str(value)


def statement_lines(statement: selectors.Statement) -> list[tuple[str, str, str]]:
    """(id, label, exact value) of the statement's summary, in order."""
    savings = statement.savings
    return [
        ("opening_balance_usd", "Opening balance", decimal_str(statement.opening_balance)),
        ("topups_usd", "Top-ups", decimal_str(statement.topups)),
        ("adjustments_usd", "Adjustments", decimal_str(statement.adjustments)),
        ("spend_usd", "Spend", decimal_str(statement.spend)),
        ("closing_balance_usd", "Closing balance", decimal_str(statement.closing_balance)),
        ("calls", "Calls", str(statement.calls)),
        ("cancelled_calls", "of which cancelled", str(statement.cancelled)),
        ("hedged_calls", "of which hedged", str(statement.hedged)),
        ("saved_vs_list_usd", "Saved vs list price", _optional(savings.vs_list)),
        (
            "saved_vs_cheapest_input_route_usd",
            "vs cheapest-input route",
            _optional(savings.vs_cheapest),
        ),
    ]


def _statement(request: HttpRequest) -> selectors.Statement:
    return selectors.monthly_statement(
        organisation_id=request.organisation.id, month=_month(request)
    )


@organisation_required
def statement_view(request: HttpRequest) -> HttpResponse:
    statement = _statement(request)
    context = {
        "statement": statement,
        "lines": statement_lines(statement),
        "month_value": statement.month.strftime("%Y-%m"),
        "nav": "statement",
    }
    return render(request, "dashboard/statement.html", context)


@organisation_required
def statement_csv_view(request: HttpRequest) -> HttpResponse:
    statement = _statement(request)
    name = f"statement-{request.organisation.slug}-{statement.month:%Y-%m}.csv"
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    writer.writerow(["item", "value"])
    writer.writerow(["month", statement.month.strftime("%Y-%m")])
    writer.writerows((line_id, value) for line_id, _, value in statement_lines(statement))
    writer.writerow([])
    writer.writerow(["model", "calls", "spend_usd"])
    for row in statement.per_model:
        writer.writerow([row["model_slug"], row["calls"], decimal_str(row["cost"])])
    writer.writerow([])
    writer.writerow(["credit_entry_at_utc", "kind", "amount_usd", "note"])
    for entry in statement.entries:
        writer.writerow(
            [
                entry.created_at.astimezone(UTC).isoformat(),
                entry.kind,
                decimal_str(entry.amount_usd),
                entry.note,
            ]
        )
    return response
