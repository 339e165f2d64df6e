"""Organisation members: list; owners add members, change roles and remove members."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from .. import selectors, services
from ..forms import MemberAddForm, MemberRoleForm
from ..models import Membership
from .common import forbidden, organisation_required, owner_required

ONLY_OWNERS = "Only the organisation's owners manage members."


def _render(request: HttpRequest, form: MemberAddForm, status: int = 200) -> HttpResponse:
    members = list(selectors.membership_list(organisation_id=request.organisation.id))
    owners = [m for m in members if m.role == Membership.Role.OWNER]
    for membership in members:  # the UI offers no action the service would refuse
        membership.is_last_owner = owners == [membership]
    context = {
        "members": members,
        "form": form,
        "roles": Membership.Role.choices,
        "is_owner": request.is_owner,
        "nav": "members",
    }
    return render(request, "dashboard/members.html", context, status=status)


@organisation_required
def members_view(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _render(request, MemberAddForm())
    if not request.is_owner:
        return forbidden(request, ONLY_OWNERS)
    form = MemberAddForm(request.POST)
    if not form.is_valid():
        return _render(request, form, status=400)
    data = form.cleaned_data
    try:
        membership, created = services.membership_create(
            organisation=request.organisation,
            username=data["username"],
            password=data["password"],
            role=data["role"],
        )
    except services.MembershipError as exc:
        form.add_error(None, str(exc))
        return _render(request, form, status=400)
    if created:
        messages.success(request, f"Added {membership.user.username} ({membership.role}).")
    else:
        messages.success(
            request,
            f"Added the existing user {membership.user.username} ({membership.role}); "
            "their password is unchanged.",
        )
    return redirect("dashboard:members")


@require_POST
@organisation_required
@owner_required(ONLY_OWNERS)
def member_role_view(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = selectors.membership_get(
        organisation_id=request.organisation.id, membership_id=membership_id
    )
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown role.")
        return redirect("dashboard:members")
    try:
        services.membership_set_role(membership=membership, role=form.cleaned_data["role"])
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{membership.user.username} is now {membership.role}.")
    return redirect("dashboard:members")


@require_POST
@organisation_required
@owner_required(ONLY_OWNERS)
def member_remove_view(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = selectors.membership_get(
        organisation_id=request.organisation.id, membership_id=membership_id
    )
    try:
        services.membership_remove(membership=membership)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Removed {membership.user.username}.")
    return redirect("dashboard:members")
