"""``/``: what a signed-in user lands on. The operator (staff without an organisation)
is sent to the operator overview (routing/operator.py, ``/operator/``); everyone else
sees Activity."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from .. import selectors
from .activity import activity_list_view


def is_operator(user) -> bool:
    """Staff without an organisation: the operator, not a customer."""
    return user.is_staff and selectors.membership_for_user(user) is None


@login_required
def home_view(request: HttpRequest) -> HttpResponse:
    """``/``: the operator overview for the operator, Activity for everyone else."""
    if is_operator(request.user):
        return redirect("operator")
    return activity_list_view(request)
