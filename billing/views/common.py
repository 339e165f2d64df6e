"""Access control shared by the dashboard views."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from .. import selectors
from ..models import Membership


def organisation_required(view):
    """Log-in required; sets ``request.organisation``, ``request.membership``,
    ``request.is_owner`` and what the member may do with keys (``request.manages_keys``,
    ``request.creates_keys``). A user without an organisation gets 403."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        membership = selectors.membership_for_user(request.user)
        if membership is None:
            return render(request, "dashboard/no_organisation.html", status=403)
        request.membership = membership
        request.organisation = membership.organisation
        request.is_owner = membership.role == Membership.Role.OWNER
        request.manages_keys = membership.manages_keys
        request.creates_keys = membership.creates_keys
        return view(request, *args, **kwargs)

    return wrapper


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "dashboard/forbidden.html", {"message": message}, status=403)


def _requiring(attribute: str, message: str):
    def decorator(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not getattr(request, attribute):
                return forbidden(request, message)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def owner_required(message: str):
    """For views under ``organisation_required``: only the organisation's owners pass."""
    return _requiring("is_owner", message)


def key_manager_required(message: str):
    """For views under ``organisation_required``: owners and admins pass."""
    return _requiring("manages_keys", message)


def _post_only(role_check):
    def decorator(view):
        return require_POST(organisation_required(role_check(view)))

    return decorator


def owner_post(message: str):
    """A POST-only action for the organisation's owners: ``require_POST`` (405), then
    ``organisation_required``, then ``owner_required(message)`` (403), in that order."""
    return _post_only(owner_required(message))


def key_manager_post(message: str):
    """A POST-only action for owners and admins: ``require_POST`` (405), then
    ``organisation_required``, then ``key_manager_required(message)`` (403)."""
    return _post_only(key_manager_required(message))
