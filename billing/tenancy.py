"""The tenancy gate (docs/security.md, "The tenancy gate").

Every model that holds one organisation's data derives from ``TenantData``:

- ``Model.objects`` is the gate. Its querysets build as usual but refuse to run (raise
  ``UnscopedQueryError``) until scoped with ``.for_organisation(org)``: a read, count,
  update or delete that forgot the organisation fails loudly instead of leaking.
  Creating rows (``create``, ``bulk_create``) is not a read and stays open.
- ``Model.unscoped_objects`` is Django's plain manager, and the model's default
  manager, so the admin, model validation, related managers (``organisation.api_keys``),
  fixtures and migrations keep working. Application code uses it only for the named
  cross-tenant reads (``unscoped_…`` selectors) and for the machinery that is
  cross-tenant by nature (the ledger writer, the reconciler, rollups, retention, key
  look-up by prefix); ``tests/billing/test_tenancy_gate.py`` keeps the list.

The check is one attribute test per query: the request path pays nothing measurable.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from django.db import models
from django.db.models import OuterRef


class UnscopedQueryError(RuntimeError):
    """A query of tenant data ran without ``.for_organisation(...)``."""


class TenantQuerySet(models.QuerySet):
    """A queryset of tenant data that runs only once scoped to one organisation."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tenant_scoped = False

    def for_organisation(self, organisation: models.Model | int | None) -> Self:
        """The rows of one organisation (an Organisation or its id); none without one
        (fail closed)."""
        if isinstance(organisation, models.Model):
            if organisation._meta.label != "billing.Organisation":
                raise TypeError(f"for_organisation() takes an Organisation, not {organisation!r}")
            organisation = organisation.pk
        if organisation:
            scoped = self.filter(**{self.model.tenant_field: organisation})
        else:
            scoped = self.none()
        scoped._tenant_scoped = True
        return scoped

    def correlated(self, field: str) -> Self:
        """The rows whose ``field`` is the outer query's row (``OuterRef("pk")``), for a
        correlated subquery: as scoped as the outer queryset it is annotated on."""
        return self.filter(**{field: OuterRef("pk")})._scoped()

    def _scoped(self) -> Self:
        """Mark as scoped by a scope other than the organisation (see subclasses)."""
        clone = self._chain()
        clone._tenant_scoped = True
        return clone

    def _require_scope(self) -> None:
        if not self._tenant_scoped:
            name = self.model.__name__
            raise UnscopedQueryError(
                f"{name} queried without an organisation: use "
                f"{name}.objects.for_organisation(org), or, for a named cross-tenant read, "
                f"{name}.unscoped_objects in an unscoped_… function (docs/security.md)."
            )

    def _clone(self) -> Self:
        clone = super()._clone()
        clone._tenant_scoped = self._tenant_scoped
        return clone

    def _combinator_query(self, combinator: str, *other_qs: models.QuerySet, **kwargs: Any):
        """A union (intersection, difference) is scoped only if every part is."""
        clone = super()._combinator_query(combinator, *other_qs, **kwargs)
        others = [getattr(other, "_tenant_scoped", True) for other in other_qs]
        clone._tenant_scoped = self._tenant_scoped and all(others)
        return clone

    def __repr__(self) -> str:
        if not self._tenant_scoped:  # repr() runs the query: not this one
            return f"<{type(self).__name__} {self.model.__name__}: unscoped, not run>"
        return super().__repr__()

    # Every way a queryset reaches the database goes through one of these.

    def _fetch_all(self) -> None:
        if self._result_cache is None:
            self._require_scope()
        super()._fetch_all()

    def iterator(self, *args: Any, **kwargs: Any):
        self._require_scope()
        return super().iterator(*args, **kwargs)

    def aiterator(self, *args: Any, **kwargs: Any):
        self._require_scope()
        return super().aiterator(*args, **kwargs)

    def count(self) -> int:
        self._require_scope()
        return super().count()

    def exists(self) -> bool:
        self._require_scope()
        return super().exists()

    def contains(self, obj: models.Model) -> bool:
        self._require_scope()
        return super().contains(obj)

    def aggregate(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._require_scope()
        return super().aggregate(*args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        self._require_scope()
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        self._require_scope()
        return super().delete()

    def _raw_delete(self, using: str) -> int:
        self._require_scope()
        return super()._raw_delete(using)

    def explain(self, *args: Any, **kwargs: Any) -> str:
        self._require_scope()
        return super().explain(*args, **kwargs)

    def resolve_expression(self, *args: Any, **kwargs: Any):
        """Used as a subquery (``id__in=queryset``): the same rule."""
        self._require_scope()
        return super().resolve_expression(*args, **kwargs)


class TenantManager(models.Manager.from_queryset(TenantQuerySet)):
    """``Model.objects`` of tenant data: the gate."""


class MembershipQuerySet(TenantQuerySet):
    def for_user(self, user: models.Model) -> Self:
        """A user's own memberships, in whatever organisations (how a signed-in user's
        organisation is found): scoped by the user, not by an organisation."""
        return self.filter(user=user)._scoped()


class MembershipManager(models.Manager.from_queryset(MembershipQuerySet)):
    """``Membership.objects``: the gate, plus the user's own memberships."""


class TenantData(models.Model):
    """A model whose rows belong to one organisation (``tenant_field`` names the lookup).
    A subclass that declares its own gate declares ``unscoped_objects`` first again, so
    the plain manager stays the default one."""

    tenant_field: ClassVar[str] = "organisation_id"

    # The first manager is the default one: Django's machinery (admin, validation,
    # related managers, serialisation) reads through it, unscoped.
    unscoped_objects = models.Manager()
    objects = TenantManager()

    class Meta:
        abstract = True
