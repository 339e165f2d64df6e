"""Members and invitations of one organisation, and a signed-in user's organisation."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db.models import QuerySet

from ..invitations import hash_from_token
from ..models import Invitation, Membership, Organisation
from .common import first_or_404


def membership_for_user(user) -> Membership | None:
    """The user's first membership (scoped by the user: ``Membership.objects.for_user``)."""
    memberships = Membership.objects.for_user(user).select_related("organisation")
    return memberships.order_by("id").first()


def organisation_for_user(user) -> Organisation | None:
    membership = membership_for_user(user)
    return membership.organisation if membership else None


def membership_list(*, organisation_id: int) -> QuerySet:
    memberships = Membership.objects.for_organisation(organisation_id).select_related("user")
    return memberships.order_by("user__username")


def membership_get(*, organisation_id: int, membership_id: int) -> Membership:
    memberships = Membership.objects.for_organisation(organisation_id).select_related("user")
    return first_or_404(memberships.filter(id=membership_id), "No such member.")


def _pending(invitations: QuerySet) -> QuerySet:
    return invitations.filter(accepted_at=None, revoked_at=None, expires_at__gt=datetime.now(UTC))


def invitation_pending_list(*, organisation_id: int) -> QuerySet:
    """The organisation's invitations not yet accepted, revoked or expired."""
    return _pending(Invitation.objects.for_organisation(organisation_id))


def unscoped_invitation_by_token(token: str) -> Invitation | None:
    """The pending invitation a link token stands for, in whatever organisation (the
    token is the capability), or None (forged, too old, used, revoked or expired: one
    answer for all)."""

    secret_hash = hash_from_token(token)
    if secret_hash is None:
        return None
    invitations = Invitation.unscoped_objects.select_related("organisation")
    return _pending(invitations).filter(secret_hash=secret_hash).first()


def invitation_get(*, organisation_id: int, invitation_id: int) -> Invitation:
    invitations = Invitation.objects.for_organisation(organisation_id)
    return first_or_404(invitations.filter(id=invitation_id), "No such invitation.")
