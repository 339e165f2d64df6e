"""Writes for tenancy and the ledger. Keyword-only, named <entity>_<action>."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from common.events import API_KEY_CHANGED, publish_on_commit
from providers.models import Endpoint

from . import invitations
from .bodies import RETENTION_DAYS_MAX, CallBodies, capped
from .keys import generate_key
from .live import notify_activity
from .models import (
    ApiKey,
    CallBody,
    CreditEntry,
    Invitation,
    Membership,
    Organisation,
    PriceChange,
    RejectedRequest,
)
from .savings import forget_reference_prices


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
    """Seeding and tests only (``seed_demo``, fixtures): no page or API calls this.
    People join an organisation by accepting an invitation."""
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    Membership.objects.for_organisation(organisation).update_or_create(
        organisation=organisation, user=user, defaults={"role": role}
    )
    return user


# What a key may be created with besides its name (all optional; None / empty: none).
KEY_LIMIT_FIELDS = (
    "monthly_limit_usd",
    "daily_limit_usd",
    "expires_at",
    "allowed_models",
    "rate_limit_rpm",
    "rate_limit_tpm",
    "max_concurrent",
)


def _check_key_fields(limits: dict) -> None:
    unknown = set(limits) - set(KEY_LIMIT_FIELDS)
    if unknown:
        raise TypeError(f"unknown key fields: {sorted(unknown)}")


def api_key_create(
    *, organisation: Organisation, name: str, creation_token: str | None = None, **limits
) -> tuple[ApiKey, str]:
    """Create a key, with any of ``KEY_LIMIT_FIELDS`` set at once; returns the row and
    the plaintext key, which is never stored."""
    _check_key_fields(limits)
    limits = {k: v for k, v in limits.items() if v is not None}
    plaintext, prefix, secret_hash = generate_key()
    api_key = ApiKey.objects.create(
        organisation=organisation,
        name=name,
        prefix=prefix,
        secret_hash=secret_hash,
        creation_token=creation_token or "",
        **limits,
    )
    return api_key, plaintext


def api_key_create_once(
    *, organisation: Organisation, name: str, creation_token: str | None, **limits
) -> tuple[ApiKey, str | None]:
    """``api_key_create`` at most once per ``creation_token`` (the create form's): the
    same form posted again (a reload, a double click, two racing requests) returns the
    key it created and no plaintext (None): that was shown once, to the first post.
    Without a token (a script), every call creates a key."""
    if not creation_token:
        return api_key_create(organisation=organisation, name=name, **limits)
    scoped = ApiKey.objects.for_organisation(organisation)
    existing = scoped.filter(creation_token=creation_token).first()
    if existing is not None:
        return existing, None
    try:
        with transaction.atomic():
            return api_key_create(
                organisation=organisation, name=name, creation_token=creation_token, **limits
            )
    except IntegrityError:  # a concurrent post of the same form won (unique token)
        return scoped.get(creation_token=creation_token), None


def api_key_update(*, api_key: ApiKey, **settings) -> ApiKey:
    """Set every one of ``KEY_LIMIT_FIELDS`` given (None: none; ``allowed_models`` None or
    empty: every model). The gateway's key caches are dropped in every process."""
    _check_key_fields(settings)
    for name, value in settings.items():
        if name == "allowed_models":
            value = list(value or [])
        setattr(api_key, name, value)
    api_key.save(update_fields=list(settings))
    _publish_key_changed(api_key)
    return api_key


def organisation_set_limits(
    *,
    organisation: Organisation,
    monthly_limit_usd,
    daily_limit_usd,
    alert_webhook_url: str = "",
    members_create_keys: bool | None = None,
) -> Organisation:
    """Set (None: clear) the organisation's hard spend limits and its alert webhook, and
    (unless None) whether members may create keys. Every key of the organisation is
    dropped from the gateway's key caches (the limits travel with the key)."""
    organisation.monthly_limit_usd = monthly_limit_usd
    organisation.daily_limit_usd = daily_limit_usd
    organisation.alert_webhook_url = alert_webhook_url or ""
    fields = ["monthly_limit_usd", "daily_limit_usd", "alert_webhook_url"]
    if members_create_keys is not None:
        organisation.members_create_keys = members_create_keys
        fields.append("members_create_keys")
    organisation.save(update_fields=fields)
    for api_key in organisation.api_keys.all():
        _publish_key_changed(api_key)
    return organisation


def _publish_organisation_keys_changed(organisation_id: int) -> None:
    for api_key in ApiKey.objects.for_organisation(organisation_id).only("id", "prefix"):
        _publish_key_changed(api_key)


def organisation_set_prepaid(*, organisation: Organisation, prepaid: bool) -> Organisation:
    """Switch the organisation between prepaid (calls draw on its credit balance; 402
    when it cannot cover a request's worst case) and post-paid. The key caches drop."""
    organisation.prepaid = prepaid
    organisation.save(update_fields=["prepaid"])
    _publish_organisation_keys_changed(organisation.id)
    return organisation


def organisation_set_body_logging(
    *, organisation: Organisation, log_bodies: bool, retention_days: int
) -> Organisation:
    """Switch keeping calls' request and reply bodies on or off (off by default) and
    set how many days they are kept (1 to ``RETENTION_DAYS_MAX``). Every gateway
    process drops the organisation's keys from its cache, so the change applies to the
    next calls within a second. Bodies kept before stay until their retention ends."""
    if not 1 <= retention_days <= RETENTION_DAYS_MAX:
        raise ValueError(f"retention is 1 to {RETENTION_DAYS_MAX} days")
    organisation.log_bodies = log_bodies
    organisation.body_retention_days = retention_days
    organisation.save(update_fields=["log_bodies", "body_retention_days"])
    _publish_organisation_keys_changed(organisation.id)
    return organisation


def call_bodies_store(*, bodies: list[CallBodies]) -> int:
    """Keep calls' bodies (the gateway's background writer, after the calls), each
    redacted and capped (billing.bodies); a request id kept already is left as it is."""
    rows = [_call_body_row(item) for item in bodies]
    CallBody.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _call_body_row(item: CallBodies) -> CallBody:
    request = capped(item.request_text)
    response = capped(item.response_text, item.response_cut)
    return CallBody(
        organisation_id=item.organisation_id,
        request_id=item.request_id[:64],
        request_body=request.text,
        request_truncated=request.truncated,
        response_body=response.text,
        response_truncated=response.truncated,
        created_at=item.created_at,
    )


def call_bodies_purge(*, now=None) -> int:
    """Delete the bodies older than their organisation's retention (each organisation's
    own rows, by its own setting); returns how many were deleted."""
    now = now or timezone.now()
    deleted = 0
    for organisation in Organisation.objects.only("id", "body_retention_days"):
        cutoff = now - timedelta(days=organisation.body_retention_days)
        expired = CallBody.objects.for_organisation(organisation).filter(created_at__lt=cutoff)
        deleted += expired.delete()[0]
    return deleted


@transaction.atomic
def credit_entry_create(
    *,
    organisation: Organisation,
    amount_usd: Decimal,
    kind: str = CreditEntry.Kind.TOPUP,
    note: str = "",
    created_by: str = "",
    created_at=None,
) -> CreditEntry:
    """Append a top-up or adjustment to the organisation's credit ledger and add it to
    ``Organisation.credit_total_usd`` in the same transaction (the credit budget's
    limit, billing.limits); every gateway process drops the organisation's keys from its
    cache after commit, so the new balance applies within a second."""
    if kind not in CreditEntry.Kind.values:
        raise ValueError(f"unknown credit entry kind {kind!r}")
    if kind == CreditEntry.Kind.TOPUP and amount_usd <= 0:
        raise ValueError("a top-up is a positive amount (take credit back with an adjustment)")
    entry = CreditEntry.objects.for_organisation(organisation).create(
        organisation=organisation,
        kind=kind,
        amount_usd=amount_usd,
        note=note[:255],
        created_by=created_by[:150],
        created_at=created_at or timezone.now(),
    )
    Organisation.objects.filter(id=organisation.id).update(
        credit_total_usd=F("credit_total_usd") + amount_usd
    )
    organisation.refresh_from_db(fields=["credit_total_usd"])
    _publish_organisation_keys_changed(organisation.id)
    return entry


def _publish_key_changed(api_key: ApiKey) -> None:
    """Drop the key from every gateway process's caches (this one at once, the others
    within a second through Redis pub/sub; within the cache TTL if Redis is down)."""

    publish_on_commit(API_KEY_CHANGED, {"prefix": api_key.prefix, "api_key_id": api_key.id})


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    _publish_key_changed(api_key)
    return api_key


class MembershipError(Exception):
    """A member change the organisation's rules forbid (shown to the owner as is)."""


def _lock_owners(organisation_id: int) -> list[int]:
    """Lock the organisation's owner rows (PostgreSQL) and return their ids, so two
    concurrent demotions cannot both see a second owner."""
    return list(
        Membership.objects.for_organisation(organisation_id)
        .select_for_update()
        .filter(role=Membership.Role.OWNER)
        .values_list("id", flat=True)
    )


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


def api_key_set_monthly_limit(*, api_key: ApiKey, limit_usd, daily_limit_usd=...) -> ApiKey:
    """Set (or clear, with None) a key's monthly (and, when given, daily) spend limit in
    USD. The gateway's key caches are dropped in every process (``_publish_key_changed``)."""
    api_key.monthly_limit_usd = limit_usd
    fields = ["monthly_limit_usd"]
    if daily_limit_usd is not ...:
        api_key.daily_limit_usd = daily_limit_usd
        fields.append("daily_limit_usd")
    api_key.save(update_fields=fields)
    _publish_key_changed(api_key)
    return api_key


# --- Invitations ------------------------------------------------------------------------


class InvitationError(Exception):
    """An invitation that can no longer be accepted (shown to the invitee as is)."""


@transaction.atomic
def invitation_create(
    *, organisation: Organisation, email: str, role: str, invited_by
) -> tuple[Invitation, str]:
    """Invite ``email``; returns the row and the link token, which is never stored.

    Nobody's account is looked up: the reply is the same whether or not the address
    (or any username) exists anywhere. An earlier pending invitation of the same
    address to this organisation is revoked."""
    if role not in Membership.Role.values:
        raise MembershipError("Unknown role.")
    email = get_user_model().objects.normalize_email(email)
    now = timezone.now()
    Invitation.objects.for_organisation(organisation).filter(
        email__iexact=email, accepted_at=None, revoked_at=None
    ).update(revoked_at=now)
    token, secret_hash = invitations.new_token()
    invitation = Invitation.objects.create(
        organisation=organisation,
        email=email,
        role=role,
        invited_by=invited_by,
        secret_hash=secret_hash,
        expires_at=now + invitations.max_age(),
    )
    return invitation, token


def invitation_send(*, invitation: Invitation, accept_url: str) -> None:
    """Mail the link (Django's email backend: the console in development)."""
    from django.core.mail import send_mail

    send_mail(
        subject=f"You are invited to {invitation.organisation.name} on UberLLM",
        message=(
            f"You are invited to join {invitation.organisation.name} on UberLLM as "
            f"{invitation.role}.\n\nAccept (once, until "
            f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC): {accept_url}\n"
        ),
        from_email=None,
        recipient_list=[invitation.email],
    )


def invitation_revoke(*, invitation: Invitation) -> Invitation:
    if invitation.accepted_at is None and invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
    return invitation


def _unscoped_lock_pending(invitation_id: int) -> Invitation:
    """Lock a pending invitation by id, in whatever organisation: the id comes from the
    link token (``unscoped_invitation_by_token``), the capability."""
    invitations = Invitation.unscoped_objects.select_for_update().select_related("organisation")
    invitation = invitations.filter(id=invitation_id).first()
    if (
        invitation is None
        or invitation.accepted_at is not None
        or invitation.revoked_at is not None
        or invitation.expires_at <= timezone.now()
    ):
        raise InvitationError("This invitation link is invalid, used or expired.")
    return invitation


@transaction.atomic
def invitation_accept(*, invitation_id: int, user) -> tuple[Membership, bool]:
    """``user`` (logged in, or just created) joins; the invitation is used up.
    Returns (membership, joined): joined is False if they were a member already
    (their role is then left as it is)."""
    invitation = _unscoped_lock_pending(invitation_id)
    membership, joined = Membership.objects.for_organisation(invitation.organisation).get_or_create(
        organisation=invitation.organisation, user=user, defaults={"role": invitation.role}
    )
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    return membership, joined


@transaction.atomic
def invitation_accept_new_user(*, invitation_id: int, username: str, password: str):
    """Create the invitee's account with the password they chose, and accept."""
    invitation = _unscoped_lock_pending(invitation_id)
    user = get_user_model().objects.create_user(
        username=username, email=invitation.email, password=password
    )
    invitation_accept(invitation_id=invitation.id, user=user)
    return user


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
    param: str = "",
    created_at,
) -> RejectedRequest:
    """Keep one request the chat endpoint refused with a 4xx (for an identified key), so
    the customer sees integration errors on Activity ("rejected"). Runs in the
    gateway's background writer; notifies live dashboards after commit."""

    rejected = RejectedRequest.objects.create(
        organisation_id=organisation_id,
        api_key_id=api_key_id,
        http_status=status,
        code=(code or "")[:64],
        message=(message or "")[:REJECTED_MESSAGE_MAX],
        model_slug=(model_slug or "")[:128],
        param=(param or "")[:128],
        created_at=created_at,
    )
    if organisation_id:
        payload = {"event": "rejected", "status": status, "code": rejected.code}
        transaction.on_commit(lambda: notify_activity(organisation_id, payload))
    return rejected


def price_changes_record(*, instance, fields: tuple[str, ...], old: dict, changed_by: str = ""):
    """Write a PriceChange per price of ``instance`` (an Endpoint or a Model) that differs
    from ``old`` (every price when ``old`` is empty: a new object's initial prices)."""

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
