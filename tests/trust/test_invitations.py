"""Members join only by accepting an invitation; owners never set passwords and learn
nothing about accounts outside their organisation (issue 12, members)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core import mail
from django.test import Client, RequestFactory

from billing.models import Invitation, Membership

from ..support import make_tenant

pytestmark = pytest.mark.django_db
PASSWORD = "pw-123456789"  # make_tenant's default
CHOSEN = "my-own-Pass-4567"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _as(user) -> Client:
    web = Client()
    web.force_login(user)
    return web


def _invite(owner_web: Client, email: str, role: str = "member") -> str:
    """Invite; returns the link shown (once) on the page."""
    response = owner_web.post("/members/", {"email": email, "role": role})
    assert response.status_code == 200
    match = re.search(r'id="invitation-link">([^<]+)<', response.content.decode())
    assert match, "the link is shown to the owner"
    return match.group(1)


def _path(link: str) -> str:
    return "/" + link.split("/", 3)[3]


def _password_is(username: str, password: str) -> bool:
    request = RequestFactory().post("/login/")
    return authenticate(request, username=username, password=password) is not None


def test_invitee_creates_their_own_account_and_password():
    acme = make_tenant("Acme")
    link = _invite(_as(acme.user), "new.person@example.com", role="owner")
    # Nobody is a member (or a user) before accepting; the link was mailed too.
    assert Membership.unscoped_objects.filter(organisation=acme.organisation).count() == 1
    assert not get_user_model().objects.filter(email="new.person@example.com").exists()
    (sent,) = mail.outbox
    assert sent.to == ["new.person@example.com"] and link in sent.body

    invitee = Client()
    page = invitee.get(_path(link))
    assert page.status_code == 200 and "Join Acme" in page.content.decode()
    response = invitee.post(
        _path(link), {"username": "newperson", "password1": CHOSEN, "password2": CHOSEN}
    )
    assert response.status_code == 302
    membership = Membership.unscoped_objects.get(user__username="newperson")
    assert (membership.organisation, membership.role) == (acme.organisation, "owner")
    assert membership.user.email == "new.person@example.com"
    assert _password_is("newperson", CHOSEN)
    assert invitee.get("/").status_code == 200  # logged in, in Acme
    # One time only.
    again = Client().post(
        _path(link), {"username": "second", "password1": CHOSEN, "password2": CHOSEN}
    )
    assert again.status_code == 404
    assert not get_user_model().objects.filter(username="second").exists()


def test_existing_user_accepts_while_logged_in_and_keeps_their_password():
    acme, other = make_tenant("Acme"), make_tenant("Other")
    link = _invite(_as(acme.user), "someone@example.com")
    web = _as(other.user)
    assert "Join as" in web.get(_path(link)).content.decode()
    assert web.post(_path(link)).status_code == 302
    joined = Membership.unscoped_objects.get(organisation=acme.organisation, user=other.user)
    assert joined.role == "member"
    assert Membership.unscoped_objects.filter(user=other.user).count() == 2
    assert _password_is(other.user.username, PASSWORD)
    assert Invitation.unscoped_objects.get().accepted_by == other.user


def test_owner_cannot_add_a_user_of_another_organisation_and_learns_nothing():
    acme, other = make_tenant("Acme"), make_tenant("Other")
    other.user.email = "taken@example.com"
    other.user.save()
    owner = _as(acme.user)
    # The old way (a username, optionally a password) is gone: a form error, the same
    # one for an existing and an unknown username.
    pages = []
    for username in (other.user.username, "no-such-user-anywhere"):
        response = owner.post(
            "/members/", {"username": username, "password": "hijack-123456", "role": "member"}
        )
        assert response.status_code == 400
        pages.append(_without_tokens(response.content.decode()))
    assert pages[0] == pages[1]
    # Inviting an address that has an account elsewhere looks exactly like inviting a
    # new one (apart from the address and the link), and adds nobody.
    invited = []
    for email in ("taken@example.com", "fresh@example.com"):
        response = owner.post("/members/", {"email": email, "role": "member"})
        html = response.content.decode()
        panel = html[html.index('<div class="panel" id="new-invitation">') :]
        panel = panel[: panel.index("</div>\n</div>")].replace(email, "EMAIL")
        invited.append((response.status_code, re.sub(r"/invite/[^<\s\"]+", "LINK", panel)))
    assert invited[0] == invited[1]
    mails = [re.sub(r"http\S+", "LINK", m.body) for m in mail.outbox]
    assert len(mails) == 2 and mails[0] == mails[1]
    assert not Membership.unscoped_objects.filter(
        organisation=acme.organisation, user=other.user
    ).exists()
    assert _password_is(other.user.username, PASSWORD)


def _without_tokens(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)


def test_expired_revoked_and_tampered_links_are_refused(settings):
    acme = make_tenant("Acme")
    owner = _as(acme.user)
    expired = _invite(owner, "a@example.com")
    Invitation.unscoped_objects.filter(email="a@example.com").update(expires_at="2000-01-01T00:00Z")
    revoked = _invite(owner, "b@example.com")
    invitation = Invitation.unscoped_objects.get(email="b@example.com")
    assert owner.post(f"/members/invitations/{invitation.id}/revoke/").status_code == 302
    valid = _invite(owner, "c@example.com")
    body = valid.rstrip("/")
    tampered = body[:-3] + ("abc" if not body.endswith("abc") else "xyz") + "/"
    for link in (expired, revoked, tampered):
        response = Client().get(_path(link))
        assert response.status_code == 404 and "invalid, used or expired" in response.text
    # The signature's age counts too, whatever the database says.
    settings.UBERLLM = {**settings.UBERLLM, "INVITATION_MAX_AGE_H": -1.0}
    assert Client().get(_path(valid)).status_code == 404
    assert Membership.unscoped_objects.filter(organisation=acme.organisation).count() == 1


def test_reinviting_an_address_revokes_the_earlier_link():
    acme = make_tenant("Acme")
    owner = _as(acme.user)
    first = _invite(owner, "x@example.com")
    second = _invite(owner, "X@example.com")
    assert Client().get(_path(first)).status_code == 404
    assert Client().get(_path(second)).status_code == 200


def test_signup_errors_keep_the_invitation():
    acme = make_tenant("Acme")
    link = _invite(_as(acme.user), "n@example.com")
    web = Client()
    mismatch = web.post(_path(link), {"username": "n", "password1": CHOSEN, "password2": "other"})
    assert mismatch.status_code == 400
    assert not get_user_model().objects.filter(username="n").exists()
    assert (
        web.post(
            _path(link), {"username": "n", "password1": CHOSEN, "password2": CHOSEN}
        ).status_code
        == 302
    )


def test_a_member_accepting_again_keeps_their_role():
    acme = make_tenant("Acme")
    link = _invite(_as(acme.user), "me@example.com", role="member")
    owner_web = _as(acme.user)
    assert owner_web.post(_path(link)).status_code == 302
    assert Membership.unscoped_objects.get(user=acme.user).role == "owner"
    assert Invitation.unscoped_objects.get().accepted_at is not None


def test_members_cannot_invite_and_invitations_are_scoped():
    acme, other = make_tenant("Acme"), make_tenant("Other")
    from billing.services import member_add

    plain = member_add(organisation=acme.organisation, username="plain", role="member")
    assert (
        _as(plain).post("/members/", {"email": "z@example.com", "role": "owner"}).status_code == 403
    )
    assert not Invitation.unscoped_objects.exists()
    _invite(_as(other.user), "for-other@example.com")
    theirs = Invitation.unscoped_objects.get()
    acme_owner = _as(acme.user)
    assert "for-other@example.com" not in acme_owner.get("/members/").content.decode()
    assert acme_owner.post(f"/members/invitations/{theirs.id}/revoke/").status_code == 404
    assert Invitation.unscoped_objects.get().revoked_at is None
    assert "for-other@example.com" in _as(other.user).get("/members/").content.decode()
    assert "for-other@example.com" not in _as(plain).get("/members/").content.decode()
