"""Organisation members: list; owners invite members, change roles and remove members.

Nobody is added without consent: an owner invites an email address and the invitee
accepts through a one-time, expiring link, with an account they create (and a password
they choose) or the account they are logged in with. No reply to an owner depends on
whether an address or a username exists anywhere.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from .. import selectors, services
from ..forms import InvitationSignupForm, MemberInviteForm, MemberRoleForm
from ..models import Invitation, Membership
from .common import forbidden, organisation_required, owner_post

ONLY_OWNERS = "Only the organisation's owners manage members."
INVALID_LINK = "This invitation link is invalid, used or expired. Ask for a new one."
LOGIN_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _render(
    request: HttpRequest,
    form: MemberInviteForm,
    status: int = 200,
    new_invitation: tuple[Invitation, str] | None = None,
) -> HttpResponse:
    organisation_id = request.organisation.id
    members = list(selectors.membership_list(organisation_id=organisation_id))
    owners = [m for m in members if m.role == Membership.Role.OWNER]
    for membership in members:  # the UI offers no action the service would refuse
        membership.is_last_owner = owners == [membership]
    context = {
        "members": members,
        "invitations": selectors.invitation_pending_list(organisation_id=organisation_id)
        if request.is_owner
        else [],
        "form": form,
        "roles": Membership.Role.choices,
        "is_owner": request.is_owner,
        "new_invitation": new_invitation,
        "nav": "members",
    }
    return render(request, "dashboard/members.html", context, status=status)


@organisation_required
def members_view(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _render(request, MemberInviteForm())
    if not request.is_owner:
        return forbidden(request, ONLY_OWNERS)
    form = MemberInviteForm(request.POST)
    if not form.is_valid():
        return _render(request, form, status=400)
    invitation, token = services.invitation_create(
        organisation=request.organisation,
        email=form.cleaned_data["email"],
        role=form.cleaned_data["role"],
        invited_by=request.user,
    )
    url = request.build_absolute_uri(reverse("dashboard:invitation-accept", args=[token]))
    services.invitation_send(invitation=invitation, accept_url=url)
    # Rendered in this response only (not redirected): the link is shown once and never
    # reaches the session store or the database.
    return _render(request, MemberInviteForm(), new_invitation=(invitation, url))


@owner_post(ONLY_OWNERS)
def invitation_revoke_view(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = selectors.invitation_get(
        organisation_id=request.organisation.id, invitation_id=invitation_id
    )
    services.invitation_revoke(invitation=invitation)
    messages.success(request, f"Invitation of {invitation.email} revoked.")
    return redirect("dashboard:members")


def invitation_accept_view(request: HttpRequest, token: str) -> HttpResponse:
    """GET: what the invitation is for and how to accept. POST: accept, logged in, or
    with a new account (username and password of the invitee's choosing)."""
    invitation = selectors.unscoped_invitation_by_token(token)
    if invitation is None:
        return render(request, "dashboard/invitation.html", {"invalid": INVALID_LINK}, status=404)
    logged_in = request.user.is_authenticated
    form = None if logged_in else InvitationSignupForm(request.POST or None)
    if request.method == "POST" and (logged_in or form.is_valid()):
        try:
            if logged_in:
                _, joined = services.invitation_accept(
                    invitation_id=invitation.id, user=request.user
                )
            else:
                user = services.invitation_accept_new_user(
                    invitation_id=invitation.id,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                )
                login(request, user, backend=LOGIN_BACKEND)
                joined = True
        except services.InvitationError:
            return render(
                request, "dashboard/invitation.html", {"invalid": INVALID_LINK}, status=404
            )
        name = invitation.organisation.name
        messages.success(request, f"You joined {name}." if joined else f"You are in {name}.")
        return redirect("dashboard:activity")
    context = {"invitation": invitation, "form": form, "token": token}
    status = 400 if request.method == "POST" else 200
    return render(request, "dashboard/invitation.html", context, status=status)


@owner_post(ONLY_OWNERS)
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


@owner_post(ONLY_OWNERS)
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
