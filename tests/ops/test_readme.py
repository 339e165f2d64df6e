"""The README is for users (issue 42): short, its settings table names every setting the
project reads, its API table every public path, and its client examples name a model the
demo (`make run`) has."""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings

BASE = settings.BASE_DIR
README = (BASE / "README.md").read_text()
API_PATHS = (
    "/api/v1/chat/completions",
    "/api/v1/responses",
    "/api/v1/messages",
    "/api/v1/messages/count_tokens",
    "/api/v1/models",
    "/api/v1/models/{author}/{slug}",
    "/api/v1/models/{author}/{slug}/endpoints",
    "/api/v1/generation",
    "/api/v1/activity",
    "/api/v1/key",
    "/api/v1/openapi.json",
    "/metrics",
    "/healthz",
    "/readyz",
)


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 210
    assert "Round 5" not in README and "round 23" not in README.lower()


def test_the_settings_table_names_every_setting_read_from_the_environment():
    source = (BASE / "uberllm" / "settings.py").read_text()
    read = set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]+)"', source))
    read |= set(re.findall(r'"(UBERLLM_[A-Z0-9_]+)"', source))
    assert len(read) > 60  # the pattern still finds them
    table = _section(README, "Settings")
    assert sorted(name for name in read if f"`{name}`" not in table) == []


@pytest.mark.parametrize("path", API_PATHS)
def test_the_api_table_lists_every_public_path(path):
    table = _section(README, "API")
    assert f"`{path}" in table


def test_client_examples_name_a_model_of_the_demo():
    catalog = json.loads((BASE / "providers" / "fixtures" / "demo_catalog.json").read_text())
    demo_models = {model["slug"] for model in catalog["models"]}
    for text in (README, (BASE / "docs" / "api.md").read_text()):
        named = set(
            re.findall(r"(?:MODEL=|model=\"|--model openai/|model = \")(deepseek/[\w.-]+)", text)
        )
        assert named and named <= demo_models, named - demo_models


CLIENT_TESTS = (
    "tests/gateway/test_chat_api.py",
    "tests/gateway/test_responses_api.py",
    "tests/gateway/test_messages_api.py",
    "tests/gateway/test_claude_code.py",
    "tests/gateway/test_model_aliases.py",
    "tests/gateway/test_codex_cli.py",
    "tests/gateway/test_openrouter_reads.py",
    "tests/gateway/test_openrouter_routing.py",
    "tests/browser/test_api_cors_browser.py",
)


def test_the_client_table_names_a_test_file_that_exists_for_every_verified_client():
    """Issue 45: README's client table lists every client verified, with the command (a
    pytest file; a bare name is in the directory of the path before it)."""
    head = "| client | verified by (`.venv/bin/python -m pytest -q …`) |"
    rows = README.split(head, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    named: list[str] = []
    for row in rows:
        folder, files = None, []
        for name in re.findall(r"`([\w/.]+\.py)`", row):
            folder = name.rsplit("/", 1)[0] if "/" in name else folder
            files.append(name if "/" in name else f"{folder}/{name}")
        assert files or "not run by a test" in row, row
        named += files
    assert named and all((BASE / path).is_file() for path in named), named
    assert sorted(set(CLIENT_TESTS) - set(named)) == []
