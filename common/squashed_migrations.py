"""Guard for squashed migrations that a database has only partly applied.

Django takes a squashed migration as applied when every migration it replaces is recorded,
and runs it when none is. A database part-way through the replaced chain is neither: Django
drops the squash from its graph and, with the replaced files gone, reports nothing to apply
while tables or columns are missing. This names such squashes so that ``migrate`` and
``/readyz`` refuse instead (docs/operations.md, "Upgrading across the migration squash").
"""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.loader import MigrationLoader


def partly_applied_squashes(connection: BaseDatabaseWrapper) -> list[str]:
    """One line per squashed migration of which some, but not all, replaced ones are recorded."""

    loader = MigrationLoader(connection)
    recorded = loader.applied_migrations or {}
    partly = []
    for (app, name), migration in sorted(loader.replacements.items()):
        applied = sum(1 for key in migration.replaces if key in recorded)
        if 0 < applied < len(migration.replaces):
            partly.append(
                f"{app}.{name}: {applied} of the {len(migration.replaces)} migrations it "
                "replaces are applied"
            )
    return partly
