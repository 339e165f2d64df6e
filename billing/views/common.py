"""Access control shared by the dashboard views."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import selectors
from ..models import Membership


def organisation_required(view):
    """Log-in required; sets ``request.organisation``, ``request.membership`` and
    ``request.is_owner``. A user without an organisation gets 403."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        membership = selectors.membership_for_user(request.user)
        if membership is None:
            return render(request, "dashboard/no_organisation.html", status=403)
        request.membership = membership
        request.organisation = membership.organisation
        request.is_owner = membership.role == Membership.Role.OWNER
        return view(request, *args, **kwargs)

    return wrapper


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "dashboard/forbidden.html", {"message": message}, status=403)


def owner_required(message: str):
    """For views under ``organisation_required``: only the organisation's owners pass."""

    def decorator(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.is_owner:
                return forbidden(request, message)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
