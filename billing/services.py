"""Writes for tenancy and the ledger. Keyword-only, named <entity>_<action>."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from .keys import generate_key
from .models import ApiKey, Membership, Organisation


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
