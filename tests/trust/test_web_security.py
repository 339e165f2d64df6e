"""Login throttling (django-axes), secure cookies, HSTS, CSP, and `check --deploy`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings
from django.test import Client

from ..support import make_tenant

ROOT = Path(django_settings.BASE_DIR)
PASSWORD = "pw-123456789"  # make_tenant's default
# What .ci/run sets for its `check --deploy` step.
PRODUCTION_ENV = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "ci-" + "x7Qp9rT2vW4yZ6bD8fH0jL3nM5" * 3,
    "DJANGO_ALLOWED_HOSTS": "gateway.example.com",
    "DJANGO_SECURE_HSTS_PRELOAD": "true",
    "UBERLLM_CREDENTIAL_KEYS": "uJ0m1JZ6xw9WvPqz3n3N7i0G5fXr3vYb8kqzV6c2sEY=",
    "UBERLLM_READ_DOT_ENV": "false",
}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Every login attempt checks a hash: PBKDF2's cost would dominate these tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _login(web: Client, username: str, password: str, url: str = "/login/"):
    return web.post(url, {"username": username, "password": password})


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_lockout_after_the_failure_limit_even_with_the_right_password(settings, url):
    settings.AXES_FAILURE_LIMIT = 3
    tenant = make_tenant("Acme")
    tenant.user.is_staff = True
    tenant.user.save()
    web = Client()
    for _ in range(2):
        response = _login(web, tenant.user.username, "wrong-password", url)
        assert response.status_code == 200 and "_auth_user_id" not in web.session
    third = _login(web, tenant.user.username, "wrong-password", url)
    assert third.status_code == 429
    right = _login(web, tenant.user.username, PASSWORD, url)
    assert right.status_code == 429 and "_auth_user_id" not in web.session
    assert "Try again later" in right.content.decode()


@pytest.mark.django_db
def test_lockout_page_is_the_same_for_unknown_usernames(settings):
    settings.AXES_FAILURE_LIMIT = 2
    make_tenant("Acme")
    pages = []
    for username in ("acme-owner", "nobody-by-this-name"):
        web = Client(REMOTE_ADDR=f"10.9.8.{len(pages) + 1}")
        for _ in range(2):
            _login(web, username, "wrong-password")
        response = _login(web, username, "wrong-password")
        assert response.status_code == 429
        page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())
        pages.append(page)
    assert pages[0] == pages[1] and "acme-owner" not in pages[0]


@pytest.mark.django_db
def test_success_before_the_limit_resets_the_count(settings):
    settings.AXES_FAILURE_LIMIT = 3
    tenant = make_tenant("Acme")
    web = Client()
    for _ in range(2):
        _login(web, tenant.user.username, "wrong-password")
    assert _login(web, tenant.user.username, PASSWORD).status_code == 302
    web.logout()
    for _ in range(2):
        assert _login(web, tenant.user.username, "wrong-password").status_code == 200
    assert _login(web, tenant.user.username, PASSWORD).status_code == 302


def _live_login(base_url: str, username: str, password: str) -> httpx.Response:
    with httpx.Client(base_url=base_url) as http:
        form = http.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        return http.post(
            "/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        )


@pytest.mark.django_db(transaction=True)
def test_lockout_through_the_live_asgi_server(gateway_server, settings):
    """The async middleware path (uvicorn), not only the test client's WSGI one."""
    settings.AXES_FAILURE_LIMIT = 3
    tenant = make_tenant("Acme")
    for _ in range(2):
        assert _live_login(gateway_server.base_url, tenant.user.username, "nope").status_code == 200
    assert _live_login(gateway_server.base_url, tenant.user.username, "nope").status_code == 429
    locked = _live_login(gateway_server.base_url, tenant.user.username, PASSWORD)
    assert locked.status_code == 429 and "Try again later" in locked.text


DASHBOARD_PAGES = ["/", "/usage/", "/keys/", "/members/"]


@pytest.mark.django_db
def test_pages_carry_a_strict_csp_and_have_no_inline_script_or_style():
    tenant = make_tenant("Acme")
    web = Client()
    pages = {"/login/": web.get("/login/")}
    web.force_login(tenant.user)
    pages.update({url: web.get(url) for url in DASHBOARD_PAGES})
    for url, response in pages.items():
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, url
        assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
        html = response.content.decode()
        inline_scripts = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", html)
        assert inline_scripts == [], url
        assert "<style" not in html and " style=" not in html, url
        assert not re.search(r"\son[a-z]+=", html), url  # no inline event handlers


@pytest.mark.django_db
def test_secure_cookies_and_hsts_when_configured(settings):
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31536000
    tenant = make_tenant("Acme")
    web = Client()
    form = web.get("/login/", secure=True)
    assert form["Strict-Transport-Security"].startswith("max-age=31536000")
    assert form.cookies["csrftoken"]["secure"] is True
    response = web.post(
        "/login/", {"username": tenant.user.username, "password": PASSWORD}, secure=True
    )
    assert response.status_code == 302
    assert response.cookies["sessionid"]["secure"] is True


def _settings_under(env: dict[str, str]) -> dict:
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT]))"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "UBERLLM_"))}
    full = {
        **base,
        "DJANGO_SETTINGS_MODULE": "uberllm.settings",
        "UBERLLM_READ_DOT_ENV": "false",
        **env,
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=full, cwd=ROOT, capture_output=True, text=True, check=True
    )
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_secure_settings_default_on_in_production_only():
    assert _settings_under({"DJANGO_ALLOWED_HOSTS": "gw.example.com"}) == [
        True,
        True,
        31536000,
        True,
    ]
    assert _settings_under({}) == [False, False, 0, False]  # local hosts only
    assert (
        _settings_under({"DJANGO_ALLOWED_HOSTS": "gw.example.com", "DJANGO_DEBUG": "true"})[0]
        is False
    )
    assert (
        _settings_under(
            {"DJANGO_ALLOWED_HOSTS": "gw.example.com", "UBERLLM_SECURE_COOKIES": "false"}
        )[0]
        is False
    )
    assert _settings_under({"UBERLLM_SECURE_COOKIES": "true"}) == [True, True, 31536000, True]


def _check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "UBERLLM_"))}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env={**base, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_check_deploy_passes_with_production_settings():
    result = _check_deploy(PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_deploy_fails_with_development_settings():
    result = _check_deploy({"UBERLLM_READ_DOT_ENV": "false"})
    assert result.returncode != 0
    assert "security.W004" in result.stderr and "providers.W001" in result.stderr
