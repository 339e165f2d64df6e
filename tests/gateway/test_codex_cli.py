"""OpenAI's Codex CLI itself (npm ``@openai/codex``, ``codex exec``) against the live
gateway and emulator, offline, over the Responses API: a plain turn, and a turn where
the model calls Codex's ``exec_command`` tool, Codex runs it and sends the output back
(the whole history again: stateless), and the model answers. Codex is configured as in
docs/api.md: a custom provider with ``wire_api = "responses"`` and ``env_key``, in a
temporary ``CODEX_HOME``. Skipped when the ``codex`` binary is not installed
(``npm install -g @openai/codex``)."""

import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from billing.models import Activity

from ..support import TEST_MODEL, wait_background_idle

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("codex") is None, reason="Codex CLI is not installed"),
]
CONFIG = """\
model = "{model}"
model_provider = "uberllm"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[model_providers.uberllm]
name = "UberLLM"
base_url = "{base_url}"
env_key = "UBERLLM_API_KEY"
wire_api = "responses"
"""


def run_codex(gateway, key: str, prompt: str, workdir: Path) -> list[dict]:
    """``codex exec --json``'s events; asserts it exited 0."""
    home = workdir / "codex-home"
    home.mkdir()
    config = CONFIG.format(model=TEST_MODEL, base_url=gateway.api_url)
    (home / "config.toml").write_text(config)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(workdir),
        "CODEX_HOME": str(home),
        "UBERLLM_API_KEY": key,
    }
    command = ["codex", "exec", "--json", "--skip-git-repo-check", "--ephemeral"]
    command += ["--sandbox", "read-only", prompt]
    done = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [orjson.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _agent_text(events: list[dict]) -> str:
    items = [e["item"] for e in events if e.get("type") == "item.completed"]
    texts = [i.get("text", "") for i in items if i.get("type") == "agent_message"]
    return texts[-1] if texts else ""


def test_codex_completes_a_turn(gateway, tenant, emulator, tmp_path):
    events = run_codex(gateway, tenant.key, "Reply with the word PONG", tmp_path)
    assert _agent_text(events).startswith("lorem")
    assert events[-1]["type"] == "turn.completed"
    assert events[-1]["usage"]["output_tokens"] == 8
    (call,) = emulator.log()
    assert call["status"] == "completed" and call["stream"] is True
    wait_background_idle()
    row = Activity.unscoped_objects.get(model_slug=TEST_MODEL)  # billed and listed like a chat call
    assert (row.status, row.stream, row.completion_tokens) == ("success", True, 8)


def test_codex_tool_round_trip(gateway, tenant, emulator, tmp_path):
    events = run_codex(gateway, tenant.key, "Run exec_command to list the files", tmp_path)
    items = [e["item"] for e in events if e.get("type") == "item.completed"]
    (command,) = [item for item in items if item["type"] == "command_execution"]
    # The emulator's call: exec_command with its schema's placeholder, run by Codex (here
    # "command not found"), whose output went back in the second request.
    assert command["command"].endswith("emulator"), command
    assert _agent_text(events).startswith("lorem")
    calls = [r for r in emulator.log() if r["status"] == "completed"]
    assert len(calls) == 2  # the tool call, then the answer
