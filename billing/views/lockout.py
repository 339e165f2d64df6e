"""The page a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

LOCKOUT_STATUS = 429


def lockout_response(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """The same page whatever the username (existing or not) and whichever limit was
    hit, so it tells an attacker nothing but "slow down"."""
    return render(request, "registration/locked_out.html", status=LOCKOUT_STATUS)
