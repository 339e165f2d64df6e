"""Claude Code itself (npm ``@anthropic-ai/claude-code``, headless ``claude -p``) against
the live gateway and emulator, offline: a plain turn, and a turn where the model calls a
tool, Claude Code runs it and sends the result back, and the model answers; and a turn
with Claude Code's own default model names, which the demo catalog's aliases map (issue
45). Skipped when the ``claude`` binary is not installed (``npm install -g
@anthropic-ai/claude-code``)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from billing.models import Activity, RejectedRequest
from providers.models import Model, ModelAlias

from ..support import TEST_MODEL, wait_background_idle

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("claude") is None, reason="Claude Code is not installed"),
]


DEMO_CATALOG = Path(__file__).parents[2] / "providers" / "fixtures" / "demo_catalog.json"


def run_claude(
    gateway, key: str, prompt: str, workdir, *extra: str, model: str | None = TEST_MODEL
) -> dict:
    """``claude -p`` against the gateway; ``model=None`` leaves Claude Code's defaults."""
    chosen = {"ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model} if model else {}
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workdir),
        "ANTHROPIC_BASE_URL": f"{gateway.base_url}/api",
        "ANTHROPIC_AUTH_TOKEN": key,
        **chosen,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    done = subprocess.run(
        ["claude", "-p", prompt, "--output-format", "json", "--max-turns", "4", *extra],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return orjson.loads(done.stdout.strip().splitlines()[-1])


def test_claude_code_completes_a_turn(gateway, tenant, emulator, tmp_path):
    result = run_claude(gateway, tenant.key, "Say hello", tmp_path)
    assert (result["type"], result["subtype"], result["is_error"]) == ("result", "success", False)
    assert result["result"].startswith("lorem")
    wait_background_idle()
    rows = Activity.unscoped_objects.filter(status="success", model_slug=TEST_MODEL)
    assert rows.exists()


def test_claude_code_tool_round_trip(gateway, tenant, emulator, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    result = run_claude(
        gateway, tenant.key, "List the files with Glob", tmp_path, "--allowedTools", "Glob"
    )
    assert result["subtype"] == "success" and not result["is_error"], result
    assert result["result"].startswith("lorem")
    assert result["num_turns"] >= 2  # the tool call, then the answer
    calls = [r for r in emulator.log() if r["status"] == "completed"]
    assert len(calls) >= 2


def test_claude_code_with_its_default_model_names_on_the_demo_aliases(
    gateway, tenant, emulator, tmp_path
):
    """No ANTHROPIC_MODEL: Claude Code sends its own model ids (claude-opus-4-8, ...).
    With the demo catalog's aliases on the test model, the turn is served and billed as
    the catalog model, and nothing is refused."""
    from routing.catalog import catalog_cache

    (demo,) = json.loads(DEMO_CATALOG.read_text())["models"]
    model = Model.objects.get(slug=TEST_MODEL)
    ModelAlias.objects.bulk_create(ModelAlias(name=name, model=model) for name in demo["aliases"])
    catalog_cache.invalidate()
    result = run_claude(gateway, tenant.key, "Say hello", tmp_path, model=None)
    assert (result["subtype"], result["is_error"]) == ("success", False), result
    assert result["result"].startswith("lorem")
    wait_background_idle()
    assert Activity.unscoped_objects.filter(status="success", model_slug=TEST_MODEL).exists()
    assert not RejectedRequest.unscoped_objects.exists()
    assert {record["model"] for record in emulator.log()} == {TEST_MODEL}
