"""Indexes of the Activity list at volume (docs/operations.md, "Activity at 10 million
rows"): (organisation, -created_at, -id) replaces (organisation, -created_at) (the list's
exact order and the API's keyset cursor), plus one per list filter. On PostgreSQL they
are built CONCURRENTLY (the ledger keeps taking writes while they build; the migration
is not atomic); elsewhere as usual."""

from django.db import migrations, models


class _ConcurrentlyOnPostgres:
    """Build/drop the index CONCURRENTLY on PostgreSQL (outside a transaction)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return self._concurrently(app_label, schema_editor, from_state, to_state, forwards=True)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return self._concurrently(app_label, schema_editor, from_state, to_state, forwards=False)


class AddIndex(_ConcurrentlyOnPostgres, migrations.AddIndex):
    def _concurrently(self, app_label, schema_editor, from_state, to_state, forwards):
        model = (to_state if forwards else from_state).apps.get_model(app_label, self.model_name)
        if forwards:
            schema_editor.add_index(model, self.index, concurrently=True)
        else:
            schema_editor.remove_index(model, self.index, concurrently=True)


class RemoveIndex(_ConcurrentlyOnPostgres, migrations.RemoveIndex):
    def _concurrently(self, app_label, schema_editor, from_state, to_state, forwards):
        if forwards:
            model = from_state.apps.get_model(app_label, self.model_name)
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.remove_index(model, index, concurrently=True)
        else:
            model = to_state.apps.get_model(app_label, self.model_name)
            index = to_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.add_index(model, index, concurrently=True)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("billing", "0008_usage_rollups"),
        ("providers", "0003_merge_20261130_1708"),
    ]

    operations = [
        AddIndex(
            model_name="activity",
            index=models.Index(
                fields=["organisation", "-created_at", "-id"], name="activity_org_newest"
            ),
        ),
        AddIndex(
            model_name="activity",
            index=models.Index(
                fields=["organisation", "status", "-created_at"], name="activity_org_status"
            ),
        ),
        AddIndex(
            model_name="activity",
            index=models.Index(
                fields=["organisation", "model_slug", "provider_slug", "-created_at"],
                name="activity_org_model",
            ),
        ),
        AddIndex(
            model_name="activity",
            index=models.Index(
                fields=["organisation", "provider_slug", "-created_at"],
                name="activity_org_provider",
            ),
        ),
        RemoveIndex(model_name="activity", name="billing_act_organis_fab992_idx"),
    ]
