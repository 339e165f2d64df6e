"""Claude Code itself (npm ``@anthropic-ai/claude-code``, headless ``claude -p``) against
the live gateway and emulator, offline: a plain turn, and a turn where the model calls a
tool, Claude Code runs it and sends the result back, and the model answers. Skipped when
the ``claude`` binary is not installed (``npm install -g @anthropic-ai/claude-code``)."""

import os
import shutil
import subprocess

import orjson
import pytest

from billing.models import Activity

from ..support import TEST_MODEL, wait_background_idle

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("claude") is None, reason="Claude Code is not installed"),
]


def run_claude(gateway, key: str, prompt: str, workdir, *extra: str) -> dict:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workdir),
        "ANTHROPIC_BASE_URL": f"{gateway.base_url}/api",
        "ANTHROPIC_AUTH_TOKEN": key,
        "ANTHROPIC_MODEL": TEST_MODEL,
        "ANTHROPIC_SMALL_FAST_MODEL": TEST_MODEL,
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
