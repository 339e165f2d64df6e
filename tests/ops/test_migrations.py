"""The squashed migrations (docs/operations.md, "Upgrading across the migration squash").

Models and migrations agree, and a database that recorded every migration the squash replaces
is taken as up to date: nothing is applied again.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from uberllm import health

# What a database migrated before the squash (at 093dc4d) has in django_migrations.
RECORDED_BEFORE_THE_SQUASH = {
    "billing": [
        "0001_initial",
        "0002_activity_hedge_cost_usd_activity_hedged_and_more",
        "0003_activity_key_index",
        "0004_invitation",
        "0004_rejected_savings_price_history",
        "0005_merge_20261130_1608",
        "0006_activity_heartbeat",
        "0007_hard_limits_rate_limits_alerts",
        "0008_usage_rollups",
        "0009_activity_list_indexes",
        "0010_usage_monthly_rollups",
        "0011_rollup_indexes_by_period",
        "0012_usage_day_totals",
        "0013_usage_month_to_date",
        "0014_tenancy_gate_managers",
        "0015_key_roles_and_creation_token",
        "0016_prepaid_credits",
        "0017_rejected_request_param",
        "0018_call_bodies",
    ],
    "providers": [
        "0001_initial",
        "0002_endpoint_credential_encrypted",
        "0002_endpoint_default_supported_parameters",
        "0003_merge_20261130_1708",
        "0004_endpoint_protocol",
        "0005_endpoint_data_policy",
        "0005_endpoint_usage_dialect",
        "0006_merge_usage_dialect_data_policy",
        "0007_model_alias",
    ],
    "routing": [
        "0001_initial",
        "0002_hedging_probes",
        "0003_speedsample_cached",
    ],
}


@pytest.mark.django_db
def test_models_and_migrations_agree():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def _plan_for_a_database_that_recorded(recorded: dict[str, list[str]]) -> list:
    recorder = MigrationRecorder(connection)
    squashed = [key for key in recorder.applied_migrations() if key[0] in recorded]
    for app, name in squashed:
        recorder.record_unapplied(app, name)
    for app, names in recorded.items():
        for name in names:
            recorder.record_applied(app, name)
    executor = MigrationExecutor(connection)
    return executor.migration_plan(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_a_database_migrated_before_the_squash_needs_nothing_applied():
    assert _plan_for_a_database_that_recorded(RECORDED_BEFORE_THE_SQUASH) == []


@pytest.mark.django_db
def test_a_database_half_way_through_the_old_chain_is_refused_not_taken_as_migrated(monkeypatch):
    half_way = {**RECORDED_BEFORE_THE_SQUASH, "billing": RECORDED_BEFORE_THE_SQUASH["billing"][:15]}
    # Django alone would report nothing to apply: the squash leaves its graph.
    assert _plan_for_a_database_that_recorded(half_way) == []

    monkeypatch.setattr(health, "_migrations_applied", False)
    ok, detail = health.check_migrations()
    assert ok is False
    assert detail == (
        "billing.0001_squashed_0018_call_bodies: 15 of the 19 migrations it replaces are applied"
    )
    with pytest.raises(SystemCheckError, match=r"providers\.E002"):
        call_command("check", "--database", "default")
