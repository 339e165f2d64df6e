"""Layout helpers without a browser: one colour per provider slug (Python and CSS agree),
the attempts' HTTP column, model names that wrap instead of being cut."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings

from billing.provider_colours import PALETTE, provider_colour, provider_colours
from billing.templatetags.dashboard import attempt_http, model_breaks, provider_class


def test_css_repeats_the_python_palette():
    css = (Path(settings.BASE_DIR) / "static/dashboard/dashboard.css").read_text()
    found = dict(re.findall(r"\.prov-(\d+) \{ --prov:(#[0-9a-f]{6}); \}", css))
    assert [found[str(i)] for i in range(len(PALETTE))] == list(PALETTE)


def test_a_provider_keeps_its_colour_whatever_the_order():
    first = provider_colours(["alpha", "bravo", "swiftinfer"])
    second = provider_colours(["swiftinfer", "bravo", "alpha", None])
    assert first == second and first["alpha"] == provider_colour("alpha")
    assert provider_class("alpha") == f"prov prov-{PALETTE.index(first['alpha'])}"
    demo = ("novacloud", "swiftinfer", "cachemart", "steadyai", "deepseek")
    assert len({provider_colour(slug) for slug in demo}) == len(demo)  # the demo's providers


@pytest.mark.parametrize(
    ("outcome", "status", "shown"),
    [
        ("success", None, "200"),
        ("success", 200, "200"),
        ("connect_error", None, "—conn"),
        ("timeout_error", None, "—timeout"),
        ("http_error", 429, "429"),
        ("cancelled", None, "—"),
    ],
)
def test_every_attempt_shows_an_http_status(outcome, status, shown):
    assert attempt_http(SimpleNamespace(outcome=outcome, http_status=status)) == shown


def test_model_names_wrap_after_slashes_and_dashes():
    assert model_breaks("meta/llama-4<b>") == "meta/<wbr>llama-<wbr>4&lt;b&gt;"
