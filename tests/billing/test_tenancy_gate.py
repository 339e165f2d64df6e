"""The tenancy gate (billing/tenancy.py): tenant data cannot be read without naming the
organisation, every tenant-data selector returns only the given organisation's rows,
and the few ways across tenants are named."""

from __future__ import annotations

import ast
import inspect
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D
from pathlib import Path

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import Http404

from billing import selectors
from billing.bodies import CallBodies
from billing.generations import generation_record
from billing.models import (
    Activity,
    ApiKey,
    Attempt,
    Membership,
    RejectedRequest,
    SpendAlert,
    UsageDaily,
)
from billing.rollups import rollup_refresh
from billing.selectors import ActivityFilters
from billing.services import (
    call_bodies_store,
    credit_entry_create,
    invitation_create,
    member_add,
)
from billing.tenancy import TenantData, UnscopedQueryError

from ..support import make_tenant

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TENANT_MODELS = [
    m for m in apps.get_app_config("billing").get_models() if issubclass(m, TenantData)
]
NOW = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)


# --- The gate ------------------------------------------------------------------------


def test_the_tenant_models_are_the_ones_that_hold_an_organisations_rows():
    names = {m.__name__ for m in TENANT_MODELS}
    assert names == {
        "Membership",
        "ApiKey",
        "Activity",
        "Attempt",
        "Invitation",
        "RejectedRequest",
        "SpendAlert",
        "UsageDaily",
        "UsageDayTotal",
        "TtftDaily",
        "CreditEntry",
        "CallBody",
    }
    for model in apps.get_app_config("billing").get_models():
        holds_rows = any(f.name == "organisation" for f in model._meta.fields)
        assert holds_rows <= issubclass(model, TenantData), model


@pytest.mark.parametrize("model", TENANT_MODELS, ids=lambda m: m.__name__)
def test_every_way_of_running_an_unscoped_query_raises(model):
    unscoped = model.objects.filter(id__gt=0)
    runs = [
        list,
        len,
        bool,
        lambda q: q.count(),
        lambda q: q.exists(),
        lambda q: q.first(),
        lambda q: q.get(id=1),
        lambda q: list(q.values_list("id")),
        lambda q: q.aggregate(),
        lambda q: list(q.iterator()),
        lambda q: q.update(id=1),
        lambda q: q.delete(),
        lambda q: q.in_bulk([1]),
        lambda q: q.explain(),
        lambda q: Activity.unscoped_objects.filter(id__in=q.values("id")).count(),
    ]
    for run in runs:
        with pytest.raises(UnscopedQueryError, match=model.__name__):
            run(unscoped)
    assert "unscoped, not run" in repr(unscoped)  # repr does not run it (debuggers, logs)


@pytest.mark.parametrize("model", TENANT_MODELS, ids=lambda m: m.__name__)
def test_scoped_and_explicitly_unscoped_queries_run(model):
    tenant = make_tenant("Solo")
    assert list(model.objects.for_organisation(tenant.organisation).order_by("id")) is not None
    assert model.objects.for_organisation(tenant.organisation.id).filter(id__gt=0).count() >= 0
    assert model.objects.for_organisation(None).count() == 0  # fails closed
    assert model.unscoped_objects.count() >= 0
    # Django's machinery (admin, validation, related managers) uses the plain manager.
    assert model._default_manager.name == "unscoped_objects"


def test_a_selector_that_forgets_the_organisation_fails_loudly():
    a, b = make_tenant("OrgA"), make_tenant("OrgB")
    _call(b, "gen-b", created_at=NOW)

    def forgetful_activity_get(request_id: str):  # the bug the gate exists for
        return Activity.objects.filter(request_id=request_id).first()

    with pytest.raises(UnscopedQueryError):
        forgetful_activity_get("gen-b")
    with pytest.raises(Http404):
        selectors.activity_get(organisation_id=a.organisation.id, request_id="gen-b")


def test_a_union_is_scoped_only_if_every_part_is():
    a = make_tenant("OrgA")
    scoped = Activity.objects.for_organisation(a.organisation).order_by()
    assert list(scoped.union(Activity.objects.for_organisation(a.organisation).order_by())) == []
    with pytest.raises(UnscopedQueryError):
        list(scoped.union(Activity.objects.order_by()))


def test_for_organisation_takes_an_organisation_or_its_id_only():
    a = make_tenant("OrgA")
    with pytest.raises(TypeError):
        ApiKey.objects.for_organisation(a.api_key)  # a key's pk is not an organisation's


def test_membership_is_scoped_by_the_user_too():
    a, b = make_tenant("OrgA"), make_tenant("OrgB")
    assert [m.organisation for m in Membership.objects.for_user(a.user)] == [a.organisation]
    assert selectors.organisation_for_user(b.user) == b.organisation


def test_model_validation_and_related_managers_are_not_gated():
    a = make_tenant("OrgA")
    duplicate = Membership(organisation=a.organisation, user=a.user, role="member")
    with pytest.raises(ValidationError):
        duplicate.full_clean()  # the unique check reads through the default manager
    assert list(a.organisation.api_keys.all()) == [a.api_key]


def test_creating_rows_needs_no_scope():
    a = make_tenant("OrgA")
    row = _call(a, "gen-new", created_at=NOW)
    Attempt.objects.create(activity=row, attempt_no=1, provider_slug="alpha", outcome="success")
    assert Attempt.objects.for_organisation(a.organisation).count() == 1


# --- Every tenant-data selector returns only the given organisation's rows ------------


def _call(tenant, request_id: str, *, created_at: datetime, **fields) -> Activity:
    return Activity.objects.create(
        request_id=request_id,
        organisation=tenant.organisation,
        api_key=tenant.api_key,
        status="success",
        created_at=created_at,
        finished_at=created_at,
        **fields,
    )


def _seed(tenant, tag: str, cost: D) -> None:
    """Rows of every tenant model, marked with ``tag`` (in slugs, names and emails)."""
    tenant.api_key.name = f"{tag} key"
    tenant.api_key.save()
    for request_id, created_at in (
        (f"gen-{tag}-old", NOW - timedelta(days=3)),
        (f"gen-{tag}-new", NOW),
    ):
        _call(
            tenant,
            request_id,
            created_at=created_at,
            model_slug=f"{tag}/model",
            provider_slug=f"{tag}prov",
            cost_usd=cost,
            prompt_tokens=10,
            ttft_ms=100,
            prompt_bucket="<8k",
            cheapest_cost_usd=cost / 2,  # paid for speed (selectors.speed_premium)
            reference_prices={"cheapest_input": {"provider": f"{tag}cheap"}},
        )
    RejectedRequest.objects.create(
        organisation=tenant.organisation,
        api_key=tenant.api_key,
        http_status=400,
        code=f"{tag}_code",
        model_slug=f"{tag}/model",
        created_at=NOW,
    )
    SpendAlert.objects.create(
        organisation=tenant.organisation,
        scope=f"org:{tag}",
        period="month",
        period_start=NOW.replace(day=1),
        threshold=80,
        limit_usd=D(1),
        spent_usd=D("0.8"),
    )
    call_bodies_store(
        bodies=[
            CallBodies(
                organisation_id=tenant.organisation.id,
                request_id=f"gen-body-{tenant.organisation.slug}",
                request_text=f"{tag} prompt",
                response_text=f"{tag} reply",
                created_at=NOW,
            )
        ]
    )
    member_add(organisation=tenant.organisation, username=f"{tag}-member")
    invitation_create(
        organisation=tenant.organisation,
        email=f"{tag}@example.com",
        role="member",
        invited_by=tenant.user,
    )


@pytest.fixture
def two_orgs():
    a, b = make_tenant("OrgA"), make_tenant("OrgB")
    _seed(a, "acme", D("0.25"))
    _seed(b, "bolt", D(7))
    for tenant, amount in ((a, D(3)), (b, D(11))):
        credit_entry_create(organisation=tenant.organisation, amount_usd=amount, created_at=NOW)
    rollup_refresh(now=NOW)
    assert UsageDaily.unscoped_objects.filter(monthly=False).count() == 2  # a day of each
    return a, b


def _read(result) -> str:
    """What a selector returned, as text (querysets with their annotations)."""
    if isinstance(result, QuerySet):
        return repr(list(result.values()))
    return repr(result)


WEEK = ActivityFilters(date_from=NOW.date() - timedelta(days=7), date_to=NOW.date())
DAYS = {"date_from": WEEK.date_from, "date_to": WEEK.date_to}

# Every public selector that takes ``organisation_id``, called for one organisation.
SCOPED_READS = {
    "credit_summary": lambda o, a: selectors.credit_summary(organisation_id=o),
    "credits_before": lambda o, a: selectors.credits_before(organisation_id=o),
    "organisation_usage_before": lambda o, a: selectors.organisation_usage_before(
        organisation_id=o
    ),
    "monthly_statement": lambda o, a: selectors.monthly_statement(
        organisation_id=o, month=NOW.date()
    ),
    "activity_list": lambda o, a: selectors.activity_list(organisation_id=o),
    "activity_filter_choices": lambda o, a: selectors.activity_filter_choices(organisation_id=o),
    "rejected_list": lambda o, a: selectors.rejected_list(organisation_id=o, filters=WEEK),
    "filter_choices": lambda o, a: selectors.filter_choices(organisation_id=o),
    "usage_totals": lambda o, a: selectors.usage_totals(organisation_id=o, filters=WEEK),
    "speed_premium": lambda o, a: selectors.speed_premium(organisation_id=o, filters=WEEK),
    "activity_row_count": lambda o, a: selectors.activity_row_count(
        organisation_id=o,
        filters=WEEK,
        totals=selectors.usage_totals(organisation_id=o, filters=WEEK),
    ),
    "usage_days": lambda o, a: selectors.usage_days(organisation_id=o, **DAYS),
    "usage_summary": lambda o, a: selectors.usage_summary(organisation_id=o, **DAYS),
    "usage_by": lambda o, a: [
        selectors.usage_by(organisation_id=o, filters=WEEK, by=by)
        for by in ("model_slug", "provider_slug", "api_key")
    ],
    "usage_ttft": lambda o, a: selectors.usage_ttft(organisation_id=o, filters=WEEK),
    "api_key_list": lambda o, a: selectors.api_key_list(organisation_id=o),
    "api_key_choices": lambda o, a: selectors.api_key_choices(organisation_id=o),
    "api_key_names": lambda o, a: selectors.api_key_names(
        organisation_id=o, ids=list(ApiKey.unscoped_objects.values_list("id", flat=True))
    ),
    "api_key_month_spend": lambda o, a: selectors.api_key_month_spend(
        organisation_id=o, api_key_id=a.api_key.id
    ),
    "api_key_usage": lambda o, a: selectors.api_key_usage(
        organisation_id=o, api_key_id=a.api_key.id
    ),
    "organisation_usage": lambda o, a: selectors.organisation_usage(organisation_id=o),
    "spend_since": lambda o, a: selectors.spend_since(
        organisation_id=o, api_key_id=None, since=NOW - timedelta(days=30)
    ),
    "spend_alerts_recent": lambda o, a: selectors.spend_alerts_recent(
        organisation_id=o, since=NOW - timedelta(days=30)
    ),
    "membership_list": lambda o, a: [
        m.user.username for m in selectors.membership_list(organisation_id=o)
    ],
    "invitation_pending_list": lambda o, a: selectors.invitation_pending_list(organisation_id=o),
    "call_body_get": lambda o, a: selectors.call_body_get(
        organisation_id=o, request_id=f"gen-body-{a.organisation.slug}"
    ),
}
# The getters: another organisation's id is a 404.
SCOPED_GETS = {
    "activity_get": lambda o, b: selectors.activity_get(
        organisation_id=o, request_id="gen-bolt-new"
    ),
    "generation_get": lambda o, b: generation_record(organisation_id=o, request_id="gen-bolt-new"),
    "rejected_get": lambda o, b: selectors.rejected_get(
        organisation_id=o,
        rejected_id=RejectedRequest.unscoped_objects.get(organisation=b.organisation).id,
    ),
    "api_key_get": lambda o, b: selectors.api_key_get(organisation_id=o, key_id=b.api_key.id),
    "membership_get": lambda o, b: selectors.membership_get(
        organisation_id=o, membership_id=Membership.unscoped_objects.get(user=b.user).id
    ),
    "invitation_get": lambda o, b: selectors.invitation_get(
        organisation_id=o,
        invitation_id=selectors.invitation_pending_list(organisation_id=b.organisation.id)[0].id,
    ),
}


def test_every_tenant_selector_is_checked_here():
    takes_organisation = {
        name
        for name in selectors.__all__
        if callable(obj := getattr(selectors, name))
        and "organisation_id" in getattr(inspect.signature(obj), "parameters", {})
    }
    takes_organisation.discard("for_organisation")
    assert takes_organisation == set(SCOPED_READS) | set(SCOPED_GETS)


@pytest.mark.parametrize("name", sorted(SCOPED_READS))
def test_a_tenant_selector_returns_only_that_organisations_rows(two_orgs, name):
    a, b = two_orgs
    read = SCOPED_READS[name]
    own = _read(read(a.organisation.id, a))
    assert "bolt" not in own
    assert "acme" not in _read(read(b.organisation.id, b))
    assert own != _read(read(None, a))  # no organisation reads nothing; A has rows
    b.organisation.delete()  # the other organisation's rows change nothing
    assert _read(read(a.organisation.id, a)) == own


@pytest.mark.parametrize("name", sorted(SCOPED_GETS))
def test_a_tenant_getter_does_not_find_another_organisations_row(two_orgs, name):
    a, b = two_orgs
    with pytest.raises(Http404):
        SCOPED_GETS[name](a.organisation.id, b)
    assert SCOPED_GETS[name](b.organisation.id, b) is not None


def test_sums_are_the_organisations_own(two_orgs):
    a, _ = two_orgs
    org = a.organisation.id
    totals = selectors.usage_totals(organisation_id=org, filters=WEEK)
    assert (totals["calls"], totals["cost"]) == (2, D("0.5"))  # one rolled, one recent
    summary = selectors.usage_summary(organisation_id=org, **DAYS)
    assert summary["totals"]["cost"] == D("0.5")
    keys = list(selectors.api_key_list(organisation_id=org))
    assert [(k.calls_total, k.spend_total) for k in keys] == [(2, D("0.5"))]


# --- The ways across tenants are named ------------------------------------------------

# Code that is cross-tenant by nature and reads through ``unscoped_objects`` without an
# ``unscoped_`` name: (module, function) -> why. Anything else must be named unscoped_….
CROSS_TENANT_MACHINERY = {
    ("billing/auth.py", "_load"): "a key is found by its prefix, which names its organisation",
    ("billing/ledger.py", "activity_open"): "the ledger writer (rows by request id)",
    ("billing/ledger.py", "activity_finish"): "the ledger writer",
    ("billing/ledger.py", "_touch_key"): "the ledger writer (a key's last use)",
    ("billing/ledger.py", "_without_gone_links"): "the ledger writer",
    ("billing/ledger.py", "activity_reconcile"): "the reconciler: every pending row",
    ("billing/ledger.py", "_close_unfinished"): "the reconciler: closes a batch of pending rows",
    ("billing/rollups.py", "*"): "rollups are built for every organisation at once",
    ("billing/retention.py", "activity_archive"): "retention: pending rows of every org",
    ("billing/retention.py", "_write"): "retention: the attempts of archived rows",
    ("billing/retention.py", "_delete"): "retention: the attempts of archived rows",
    ("billing/tasks.py", "spend_alert_deliver_task"): "Celery delivers any alert",
    ("billing/tasks.py", "spend_alerts_deliver_task"): "Celery delivers any alert",
    ("routing/health.py", "attempt_rates"): "operator endpoint health",
    ("routing/health.py", "unusable_mark"): "operator endpoint health",
    ("routing/health.py", "_success_rates"): "the operator's overview: every endpoint's rate",
    ("lab/management/commands/activity_timings.py", "handle"): "a benchmark's row count",
}


def _unscoped_uses() -> set[tuple[str, str]]:
    """(module, enclosing function) of every ``.unscoped_objects`` in the code."""
    uses = set()
    for folder in ("billing", "routing", "providers", "common", "uberllm", "lab"):
        for path in (ROOT / folder).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            module = path.relative_to(ROOT).as_posix()
            uses |= {(module, fn) for fn in _functions_using(ast.parse(path.read_text()))}
    return uses


def _functions_using(tree: ast.AST, function: str = "<module>") -> set[str]:
    found = set()
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found |= _functions_using(node, node.name)
        elif isinstance(node, ast.Attribute) and node.attr == "unscoped_objects":
            found.add(function)
            found |= _functions_using(node, function)
        else:
            found |= _functions_using(node, function)
    return found


def test_every_cross_tenant_read_is_named_or_listed():
    unnamed = {
        (module, fn)
        for module, fn in _unscoped_uses()
        if not fn.lstrip("_").startswith("unscoped_")
        and (module, fn) not in CROSS_TENANT_MACHINERY
        and (module, "*") not in CROSS_TENANT_MACHINERY
    }
    assert unnamed == set(), "name these unscoped_… or list them in CROSS_TENANT_MACHINERY"


def test_the_named_cross_tenant_selectors_exist():
    named = {name for name in selectors.__all__ if name.startswith("unscoped_")}
    assert named == {
        "unscoped_organisation_spend",
        "unscoped_spend_by_model_bucket",
        "unscoped_invitation_by_token",
    }
