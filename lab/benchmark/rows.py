"""The load test's database side: its organisation, per-request keys, and the ledger rows.

Runs in the ``manage.py loadtest`` process (Django set up, synchronous ORM, never inside
the client's event loop). One API key per request lets the ledger be checked request by
request even for requests cut before any response header (no ``X-Generation-Id`` seen).
Keys are created with ``last_used_at`` = now, as a key in steady use: the gateway writes
that column at most once a minute per key, so no extra write per request is measured.
"""

from __future__ import annotations

import time
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from billing.keys import generate_key
from billing.models import Activity, ApiKey, Organisation
from billing.services import organisation_create

from .figures import Row

ORGANISATION = "loadtest"


def organisation() -> Organisation:
    """The load test's organisation, emptied of the previous run's rows and keys."""
    org = Organisation.objects.filter(slug=ORGANISATION).first()
    if org is None:
        org = organisation_create(name=ORGANISATION)
    Activity.objects.for_organisation(org).delete()
    ApiKey.objects.for_organisation(org).delete()
    return org


def create_keys(org: Organisation, count: int, name: str) -> list[tuple[int, str]]:
    """``count`` fresh keys as (id, plaintext), in one bulk insert."""
    now = timezone.now()
    made = [generate_key() for _ in range(count)]
    ApiKey.objects.bulk_create(
        ApiKey(
            organisation=org, name=name, prefix=prefix, secret_hash=secret_hash, last_used_at=now
        )
        for _, prefix, secret_hash in made
    )
    keys = ApiKey.objects.for_organisation(org).filter(prefix__in=[p for _, p, _ in made])
    ids = dict(keys.values_list("prefix", "id"))
    return [(ids[prefix], plaintext) for plaintext, prefix, _ in made]


def rows_since(org: Organisation, since: datetime) -> list[Row]:
    fields = ("request_id", "api_key_id", "status", "http_status", "completion_tokens")
    query = (
        Activity.objects.for_organisation(org).filter(created_at__gte=since).values_list(*fields)
    )
    return [Row(*values) for values in query]


def wait_settled(org: Organisation, since: datetime, timeout: float) -> float:
    """Wait (at most ``timeout`` s) until no row of the window is pending and the row
    count has not moved for a second (spooled rows landing); seconds waited."""
    start, last, stable_since = time.monotonic(), -1, time.monotonic()
    while time.monotonic() - start < timeout:
        counts = (
            Activity.objects.for_organisation(org)
            .filter(created_at__gte=since)
            .aggregate(
                total=Count("id"), pending=Count("id", filter=Q(status=Activity.Status.PENDING))
            )
        )
        if counts["total"] != last:
            last, stable_since = counts["total"], time.monotonic()
        elif not counts["pending"] and time.monotonic() - stable_since >= 1.0:
            break
        time.sleep(0.25)
    return time.monotonic() - start
