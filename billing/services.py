"""Writes for tenancy and the ledger. Keyword-only, named <entity>_<action>."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from .keys import generate_key
from .models import ApiKey, Membership, Organisation, PriceChange, RejectedRequest


@transaction.atomic
def organisation_create(*, name: str, owner=None) -> Organisation:
    base = slugify(name)[:50] or "org"
    slug, n = base, 1
    while Organisation.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    organisation = Organisation.objects.create(name=name, slug=slug)
    if owner is not None:
        Membership.objects.create(organisation=organisation, user=owner, role=Membership.Role.OWNER)
    return organisation


@transaction.atomic
def member_add(
    *, organisation: Organisation, username: str, password: str | None = None, role: str = "member"
):
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    Membership.objects.update_or_create(
        organisation=organisation, user=user, defaults={"role": role}
    )
    return user


def api_key_create(*, organisation: Organisation, name: str) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the plaintext key, which is never stored."""
    plaintext, prefix, secret_hash = generate_key()
    api_key = ApiKey.objects.create(
        organisation=organisation, name=name, prefix=prefix, secret_hash=secret_hash
    )
    return api_key, plaintext


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    from .auth import forget_cached_key

    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    forget_cached_key(api_key.prefix)
    return api_key


class MembershipError(Exception):
    """A member change the organisation's rules forbid (shown to the owner as is)."""


def _lock_owners(organisation_id: int) -> list[int]:
    """Lock the organisation's owner rows (PostgreSQL) and return their ids, so two
    concurrent demotions cannot both see a second owner."""
    return list(
        Membership.objects.select_for_update()
        .filter(organisation_id=organisation_id, role=Membership.Role.OWNER)
        .values_list("id", flat=True)
    )


@transaction.atomic
def membership_create(
    *, organisation: Organisation, username: str, password: str = "", role: str = "member"
) -> tuple[Membership, bool]:
    """Add a user to the organisation: a new user with ``password``, or an existing user
    (whose password is never changed here). Returns (membership, user_created)."""
    if role not in Membership.Role.values:
        raise MembershipError("Unknown role.")
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    created = user is None
    if created:
        if not password:
            raise MembershipError(f"No user '{username}' exists: give an initial password.")
        user = user_model(username=username)
        user.set_password(password)
        user.save()
    elif Membership.objects.filter(organisation=organisation, user=user).exists():
        raise MembershipError(f"{username} is already a member.")
    membership = Membership.objects.create(organisation=organisation, user=user, role=role)
    return membership, created


@transaction.atomic
def membership_set_role(*, membership: Membership, role: str) -> Membership:
    if role not in Membership.Role.values:
        raise MembershipError("Unknown role.")
    owners = _lock_owners(membership.organisation_id)
    if role != Membership.Role.OWNER and owners == [membership.id]:
        raise MembershipError("An organisation needs at least one owner.")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    owners = _lock_owners(membership.organisation_id)
    if owners == [membership.id]:
        raise MembershipError("The last owner cannot be removed.")
    membership.delete()


def api_key_set_monthly_limit(*, api_key: ApiKey, limit_usd) -> ApiKey:
    """Set (or clear, with None) a key's monthly spend limit in USD. The gateway's key
    cache is dropped so this process enforces the new limit at once (others within
    ``API_KEY_CACHE_TTL_S``)."""
    from .auth import forget_cached_key

    api_key.monthly_limit_usd = limit_usd
    api_key.save(update_fields=["monthly_limit_usd"])
    forget_cached_key(api_key.prefix)
    return api_key


# --- Rejected requests and price history ----------------------------------------------

REJECTED_MESSAGE_MAX = 2000


def record_rejected_request(
    *,
    organisation_id: int | None,
    api_key_id: int | None,
    status: int,
    code: str,
    message: str,
    model_slug: str = "",
    created_at,
) -> RejectedRequest:
    """Keep one request the chat endpoint refused with a 4xx (for an identified key), so
    the customer sees integration errors on Activity ("rejected"). Runs in the
    gateway's background writer; notifies live dashboards after commit."""
    from .live import notify_activity

    rejected = RejectedRequest.objects.create(
        organisation_id=organisation_id,
        api_key_id=api_key_id,
        http_status=status,
        code=(code or "")[:64],
        message=(message or "")[:REJECTED_MESSAGE_MAX],
        model_slug=(model_slug or "")[:128],
        created_at=created_at,
    )
    if organisation_id:
        payload = {"event": "rejected", "status": status, "code": rejected.code}
        transaction.on_commit(lambda: notify_activity(organisation_id, payload))
    return rejected


def price_changes_record(*, instance, fields: tuple[str, ...], old: dict, changed_by: str = ""):
    """Write a PriceChange per price of ``instance`` (an Endpoint or a Model) that differs
    from ``old`` (every price when ``old`` is empty: a new object's initial prices)."""
    from providers.models import Endpoint

    from .savings import forget_reference_prices

    target = {"endpoint": instance} if isinstance(instance, Endpoint) else {"model": instance}
    now = timezone.now()
    rows = [
        PriceChange(
            field=name,
            old_price=old.get(name),
            new_price=getattr(instance, name),
            changed_by=changed_by[:150],
            changed_at=now,
            **target,
        )
        for name in fields
        if not old or old.get(name) != getattr(instance, name)
    ]
    if rows:
        PriceChange.objects.bulk_create(rows)
        forget_reference_prices()
    return rows
