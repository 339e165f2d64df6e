"""The deployment files agree with the code that runs the tested fleet."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml
from django.conf import settings

from lab.fleet import render_nginx_config

DEPLOY = settings.BASE_DIR / "deploy"


def test_the_compose_nginx_config_is_the_rendered_template():
    rendered = render_nginx_config("0.0.0.0:8080", ["gateway-1:8000", "gateway-2:8000"])
    assert (DEPLOY / "compose" / "nginx.conf").read_text() == rendered


NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else "")


def test_the_compose_file_runs_the_tested_fleet():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "gateway-1", "gateway-2", "worker", "beat", "nginx"} <= set(
        services
    )
    assert services["rollup"]["command"] == ["python", "manage.py", "rollup_usage"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "uvicorn uberllm.asgi:application" in dockerfile  # the app the fleet runs
    assert "--timeout-graceful-shutdown" in dockerfile


@pytest.mark.skipif(not NGINX, reason="nginx is not installed")
def test_nginx_accepts_the_rendered_config(tmp_path):
    nginx = NGINX
    (tmp_path / "logs").mkdir()
    (tmp_path / "tmp").mkdir()
    (tmp_path / "nginx.conf").write_text(render_nginx_config("127.0.0.1:1", ["127.0.0.1:2"]))
    result = subprocess.run(
        [nginx, "-t", "-p", f"{tmp_path}/", "-c", "nginx.conf"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
