"""The invitation flow in Chromium against the live server: an owner invites an address,
copies the link shown once, logs out; the invitee opens it, creates their own account
and lands in the organisation. No console error (the strict CSP included)."""

from __future__ import annotations

import pytest

from billing.models import Invitation, Membership

from .helpers import PASSWORD, browser_page

pytestmark = pytest.mark.django_db(transaction=True)
CHOSEN = "chosen-by-me-9876"


def test_invitation_in_a_browser(playwright_api, gateway, tenant):
    base = gateway.base_url
    owner = tenant.user.username
    with browser_page(playwright_api) as (page, problems):
        page.goto(f"{base}/login/")
        page.fill("#id_username", owner)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")
        page.goto(f"{base}/members/")
        page.fill("#id_email", "invitee@example.com")
        page.select_option("#id_role", "member")
        page.click("#invite-member button[type=submit]")
        link = page.inner_text("#invitation-link").strip()
        assert link.startswith(f"{base}/invite/")
        assert page.locator('tr[data-invitation="invitee@example.com"]').is_visible()
        page.click("header form button[type=submit]")  # log out
        page.wait_for_url(lambda url: "/login/" in url)

        page.goto(link)
        assert "Join Acme" in page.inner_text("h1")
        page.fill("#id_username", "invitee")
        page.fill("#id_password1", CHOSEN)
        page.fill("#id_password2", CHOSEN)
        page.click("#accept-invitation button[type=submit]")
        page.wait_for_url(f"{base}/")
        assert "invitee" in page.inner_text("header .who")
        assert "You joined Acme." in page.inner_text(".messages")
        page.goto(link)  # used up
        assert "invalid, used or expired" in page.inner_text("#invitation-invalid")
    assert [p for p in problems if "404" not in p] == []  # the used link's 404 is expected
    membership = Membership.unscoped_objects.get(user__username="invitee")
    assert membership.organisation == tenant.organisation and membership.role == "member"
    assert Invitation.unscoped_objects.get().accepted_by == membership.user
