"""What the browser tests share: Chromium pages (a desktop's, a touch phone's, or a phone
in the same browser with the same login), logging in, screenshots (to the git-ignored
test-artifacts/, or to docs/img/ for the ones the docs show), the layout measures, and
serving pages rendered by the Django test client to Chromium without a live server.

Playwright's sync API runs an event loop in the test's thread, where Django refuses
database calls: do the database work before opening a page, or through ``on_db``."""

from __future__ import annotations

import mimetypes
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from django.conf import settings

CHROMIUM = os.environ.get("UBERLLM_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
DOCS_IMG = Path(settings.BASE_DIR) / "docs" / "img"
PASSWORD = "pw-123456789"  # tests.support.make_tenant's default
ORIGIN = "http://dashboard.test"  # the routed origin of served (not live) pages
PHONE = {"width": 390, "height": 844}
T = TypeVar("T")


def _watch(page, problems: list[str]) -> None:
    """Record page errors, console errors and 404s in ``problems``; accept dialogs (the
    revoke confirmation)."""
    page.set_default_timeout(10_000)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda msg: msg.type == "error" and problems.append(f"console: {msg.text}"),
    )
    page.on("response", lambda r: r.status == 404 and problems.append(f"404: {r.url}"))
    page.on("dialog", lambda dialog: dialog.accept())


@contextmanager
def browser_page(sync_api, width: int = 1366, height: int = 900, *, touch: bool = False):
    """A Chromium page (a touch phone's with ``touch``) and the list of its problems."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(
            viewport={"width": width, "height": height}, is_mobile=touch, has_touch=touch
        )
        page = context.new_page()
        problems: list[str] = []
        _watch(page, problems)
        try:
            yield page, problems
        finally:
            context.close()
            browser.close()


@contextmanager
def phone_page(page, problems: list[str]) -> Iterator:
    """A 390 px touch phone's page in ``page``'s browser, logged in as ``page`` is (its
    cookies copied): the same session seen on a phone."""
    context = page.context.browser.new_context(
        viewport=PHONE,
        is_mobile=True,
        has_touch=True,
        storage_state=page.context.storage_state(),
    )
    phone = context.new_page()
    _watch(phone, problems)
    try:
        yield phone
    finally:
        context.close()


def log_in(page, base: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/")
    assert "/login/" in page.url
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def artifact_shot(page, name: str) -> None:
    """A full-page screenshot to test-artifacts/ (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def docs_shot(page, name: str, *, full_page: bool = False) -> None:
    """A screenshot the docs show: docs/img/<name>.png, the viewport unless asked."""
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_IMG / f"{name}.png"), full_page=full_page)


def no_horizontal_overflow(page) -> bool:
    return page.evaluate(
        "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def overflowing(page) -> list[str]:
    """Tables wider than their box, and model cells whose text is cut."""
    return page.evaluate(
        """() => [
        ...[...document.querySelectorAll('.table-wrap')].filter(
            w => w.scrollWidth > w.clientWidth + 1).map(
            w => w.querySelector('table').id + ' by ' + (w.scrollWidth - w.clientWidth) + ' px'),
        ...[...document.querySelectorAll('td.c-model')].filter(
            td => td.scrollWidth > td.clientWidth + 1).map(td => 'cut: ' + td.textContent)]"""
    )


def calls_on_first_screen(page) -> int:
    """Activity's calls wholly inside the first screen (their boxes' bottoms within the
    viewport's height, the page not scrolled)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#activity tr.call')].filter(
            tr => tr.getBoundingClientRect().bottom <= window.innerHeight).length"""
    )


def serve(pages: dict[str, str]) -> Callable:
    """A Playwright route handler for ORIGIN: the rendered ``pages`` by path (with the
    query), the static files from Django's finders, 404 for anything else."""
    from django.contrib.staticfiles import finders

    def handle(route) -> None:
        url = urlsplit(route.request.url)
        path = url.path + (f"?{url.query}" if url.query else "")
        if url.path.startswith("/static/"):
            found = finders.find(url.path.removeprefix("/static/"))
            if found:
                kind = mimetypes.guess_type(found)[0] or "application/octet-stream"
                return route.fulfill(body=Path(found).read_bytes(), content_type=kind)
        if path in pages:
            return route.fulfill(body=pages[path], content_type="text/html; charset=utf-8")
        return route.fulfill(status=404, body="")

    return handle


def on_db(function: Callable[..., T], *args, **kwargs) -> T:
    """``function(*args, **kwargs)`` in a worker thread, for database work while a page
    is open (Django refuses it in the thread running Playwright's event loop); the
    worker's connections are closed after."""
    from django.db import connections

    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["value"] = function(*args, **kwargs)
        except BaseException as exc:  # re-raised in the test's thread
            result["error"] = exc
        finally:
            connections.close_all()

    worker = threading.Thread(target=run, name="browser-test-db")
    worker.start()
    worker.join()
    if "error" in result:
        raise result["error"]
    return result["value"]  # type: ignore[return-value]
