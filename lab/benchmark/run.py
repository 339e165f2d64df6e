"""Orchestrating one overhead benchmark: processes, cells, results.

Everything listens on 127.0.0.1. Processes: the emulator (one uvicorn process), the
gateway (``uberllm.asgi:application`` under uvicorn, as ``make run``, or Granian, with
``--workers`` processes), optionally the LiteLLM proxy, and for each cell a fresh
load-generator process. After the cells, each server's idle CPU is read over a quiet
window. A cell is (pacing, concurrency, target); the targets of a cell run one after
another, so every ratio compares figures measured minutes apart on the same machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .procs import cpu_seconds, tree_pids
from .seed import MODEL, PROVIDER

PACED = "paced"
UNPACED = "unpaced"
MODES = {
    PACED: "50 tokens at 20 ms (output 50 tok/s), TTFT 10 ms",
    UNPACED: "50 tokens, no waiting (emulator time_scale 0)",
}
DIRECT, UBERLLM, LITELLM = "direct", "uberllm", "litellm"
# A paced stream lasts about a second (50 tokens at 20 ms): a paced cell runs long
# enough for ``Options.min_paced_streams`` of them, so a p50 at one stream is not the
# median of five.
PACED_STREAM_S = 1.0
LITELLM_MASTER_KEY = "sk-bench-master-key"
EMULATOR_PROFILE = {
    "_comment": "bench_overhead: one provider, no jitter, no prompt-size effect.",
    "seed": 1,
    "time_scale": 1.0,
    "providers": {
        PROVIDER: {
            "models": [MODEL],
            "ttft_base_s": 0.01,
            "prefill_tokens_per_s": 1e9,
            "jitter": {"kind": "none", "sigma": 0.0},
            "output_tokens_per_s": 50,
            "default_output_tokens": 50,
        }
    },
}
REQUEST = {
    "model": MODEL,
    "messages": [
        {"role": "system", "content": "You are a benchmark. Answer briefly."},
        {"role": "user", "content": "Say something."},
    ],
    "stream": True,
}


@dataclass
class Options:
    duration: float = 8.0
    warmup: float = 1.5
    settle: float = 1.0
    concurrency: list[int] = field(default_factory=lambda: [1, 32, 128])
    modes: list[str] = field(default_factory=lambda: [PACED, UNPACED])
    workers: int = 1
    app: str = "uberllm.asgi:application"  # the ASGI application the server serves
    server: str = "uvicorn"  # or "granian"
    idle_s: float = 10.0  # the quiet window for idle CPU (0: not measured)
    min_paced_streams: int = 30  # a paced cell measures at least this many streams
    litellm: str | None = None  # the `litellm` executable, or None to skip it
    database_url: str | None = None  # None: the production settings' database
    redis: bool = False
    log: Callable[[str], None] = print


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http(method: str, url: str, body: dict | None = None, timeout: float = 5.0) -> int:
    return httpx.request(method, url, json=body, timeout=timeout, trust_env=False).status_code


def wait_ready(url: str, proc: subprocess.Popen, timeout: float, name: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} before it was ready")
        try:
            if _http("GET", url, timeout=2.0) == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{name} not ready after {timeout} s ({url})")


SERVERS = ("uvicorn", "granian")


def gateway_argv(server: str, app: str, port: int, workers: int) -> list[str]:
    """The command serving ``app`` on 127.0.0.1:``port`` with ``workers`` processes."""
    listen = ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    quiet = ["--log-level", "warning", "--no-access-log"]
    if server == "granian":
        # asginl: ASGI without lifespan, as first measured (uberllm.asgi routes lifespan
        # now; under Granian the startup's gc.freeze and the shutdown drain are skipped).
        granian = [sys.executable, "-m", "granian", "--interface", "asginl"]
        return [*granian, *listen, "--loop", "uvloop", *quiet, "--no-ws", app]
    return [sys.executable, "-m", "uvicorn", app, *listen, *quiet]


def redis_argv(port: int, *extra: str) -> list[str]:
    """A throwaway redis-server on loopback ``port``: nothing saved, no append-only file."""
    return [
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        *extra,
    ]


def gateway_env(key_prefix: str, database_url: str | None) -> dict[str, str]:
    """The environment of the processes a benchmark starts: this one's, with the product's
    settings module and ``key_prefix`` for Redis unless set, private upstreams allowed
    (the emulator on loopback), quiet logs, and ``database_url`` when given."""
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "uberllm.settings")
    env.setdefault("UBERLLM_SHARED_KEY_PREFIX", key_prefix)
    env.update(
        UBERLLM_ALLOW_PRIVATE_UPSTREAMS="true",
        DJANGO_DEBUG="false",
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def spawn(argv: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """Start ``argv`` in its own session (so its whole tree can be stopped), output to a log."""
    log = open(log_path, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop_process(proc: subprocess.Popen | None, grace: float = 15.0) -> None:
    """SIGTERM the process group of ``proc`` (a server and its workers), SIGKILL after ``grace``."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


class Bench:
    def __init__(self, options: Options, base_dir: Path) -> None:
        self.o = options
        self.base_dir = base_dir
        self.work = base_dir / "var" / "bench"
        self.work.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.api_key = ""
        self.env = self._env()
        self.mode = PACED

    # --- processes -------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        return gateway_env("ullm-bench", self.o.database_url)

    def _spawn(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        proc = spawn(argv, self.base_dir, env or self.env, self.work / f"{name}.log")
        self.procs[name] = proc
        return proc

    def _module(self, name: str) -> str:
        """``name`` as the checkout in ``base_dir`` spells it: before the lab moved out of
        the product's rooms (issue 41), the emulator was ``providers.emulator`` and the
        benchmarks ``routing.benchmark`` (so ``bench_ab`` pairs against older commits)."""
        if (self.base_dir / "lab").is_dir():
            return name
        old = {"lab.emulator": "providers.emulator", "lab.benchmark": "routing.benchmark"}
        head = next((k for k in old if name == k or name.startswith(k + ".")), None)
        return name if head is None else old[head] + name[len(head) :]

    def start(self) -> None:
        py = sys.executable
        profile = self.work / "emulator.json"
        profile.write_text(json.dumps(EMULATOR_PROFILE, indent=1))
        self.ports = {name: free_port() for name in (DIRECT, UBERLLM, LITELLM)}
        emu = self._spawn(
            "emulator",
            [
                py,
                "-m",
                self._module("lab.emulator"),
                "--profiles",
                str(profile),
                "--port",
                str(self.ports[DIRECT]),
            ],
        )
        wait_ready(f"{self.emulator_url}/_health", emu, 30, "emulator")
        self.o.log("seeding the bench database (migrate, catalog, key) ...")
        seeded = subprocess.run(
            [py, "-m", self._module("lab.benchmark.seed"), "--emulator-url", self.emulator_url],
            cwd=self.base_dir,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if seeded.returncode != 0:
            raise RuntimeError(f"seeding failed:\n{seeded.stderr[-3000:]}")
        self.api_key = json.loads(seeded.stdout.strip().splitlines()[-1])["api_key"]
        argv = gateway_argv(self.o.server, self.o.app, self.ports[UBERLLM], self.o.workers)
        # For an --app that relays to the provider itself (lab.benchmark.floor).
        upstream = f"{self.emulator_url}/{PROVIDER}/v1/chat/completions"
        gateway = self._spawn("uberllm", argv, {**self.env, "UBERLLM_BENCH_UPSTREAM": upstream})
        wait_ready(f"http://127.0.0.1:{self.ports[UBERLLM]}/api/v1/models", gateway, 60, "gateway")
        if self.o.litellm:
            self._start_litellm()

    @property
    def emulator_url(self) -> str:
        return f"http://127.0.0.1:{self.ports[DIRECT]}"

    def _start_litellm(self) -> None:
        config = self.work / "litellm.yaml"
        config.write_text(
            "model_list:\n"
            f"  - model_name: {MODEL}\n"
            "    litellm_params:\n"
            f"      model: openai/{MODEL}\n"
            f"      api_base: {self.emulator_url}/{PROVIDER}/v1\n"
            "      api_key: sk-emulator\n"
            "litellm_settings:\n"
            "  telemetry: false\n"
            "general_settings:\n"
            f"  master_key: {LITELLM_MASTER_KEY}\n"
        )
        env = {
            k: v
            for k, v in self.env.items()
            if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
        }
        env.update(
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            LITELLM_LOG="ERROR",
            LITELLM_TELEMETRY="False",
            NO_DOCS="True",
        )
        argv = [
            self.o.litellm,
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.ports[LITELLM]),
            "--num_workers",
            str(self.o.workers),
        ]
        proc = self._spawn("litellm", argv, env)
        url = f"http://127.0.0.1:{self.ports[LITELLM]}/health/liveliness"
        try:
            wait_ready(url, proc, 180, "litellm")
        except RuntimeError as exc:
            self.o.log(f"LiteLLM did not start ({exc}); see {self.work / 'litellm.log'}")
            self._stop("litellm")
            self.o.litellm = None

    def _stop(self, name: str) -> None:
        stop_process(self.procs.pop(name, None))

    def stop(self) -> None:
        for name in list(self.procs):
            self._stop(name)

    # --- cells -------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        self.mode = mode
        url = f"{self.emulator_url}/_control/{PROVIDER}"
        _http("POST", url, {"reset": True})
        if mode == UNPACED:
            _http("POST", url, {"time_scale": 0})
        _http("POST", f"{self.emulator_url}/_reset", {})

    def target(self, name: str) -> tuple[str, list[str], int]:
        if name == DIRECT:
            return f"{self.emulator_url}/{PROVIDER}/v1/chat/completions", [], 0
        if name == UBERLLM:
            url = f"http://127.0.0.1:{self.ports[UBERLLM]}/api/v1/chat/completions"
            return url, [f"Authorization: Bearer {self.api_key}"], self.procs[UBERLLM].pid
        url = f"http://127.0.0.1:{self.ports[LITELLM]}/v1/chat/completions"
        return url, [f"Authorization: Bearer {LITELLM_MASTER_KEY}"], self.procs[LITELLM].pid

    def duration(self, concurrency: int) -> float:
        """Measured seconds of a cell: ``--duration``, longer at low concurrency when
        paced (``Options.min_paced_streams``)."""
        if self.mode != PACED:
            return self.o.duration
        return max(self.o.duration, self.o.min_paced_streams * PACED_STREAM_S / concurrency)

    def cell(self, name: str, concurrency: int, body: dict | None = None) -> dict:
        url, headers, pid = self.target(name)
        body = body or REQUEST
        argv = [
            sys.executable,
            "-m",
            self._module("lab.benchmark.loadgen"),
            "--url",
            url,
            "--body",
            json.dumps(body),
            "-c",
            str(concurrency),
            "--warmup",
            str(self.o.warmup),
            "--duration",
            str(self.duration(concurrency)),
            "--watch",
            f"emulator={self.procs['emulator'].pid}",
        ]
        for header in headers:
            argv += ["--header", header]
        if not body.get("stream"):
            argv.append("--plain")
        if pid:
            argv += ["--watch", f"server={pid}"]
        done = subprocess.run(argv, cwd=self.base_dir, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"load generator failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout)

    def idle(self) -> dict[str, float]:
        """Idle CPU (% of a core) of each server, measured together after a pause."""
        if self.o.idle_s <= 0:
            return {}
        self.o.log(f"  idle CPU over {self.o.idle_s:g} s ...")
        time.sleep(2.0)  # let the last cell's connections and ledger writes finish
        names = [n for n in (UBERLLM, LITELLM) if n in self.procs]
        roots = {name: tree_pids(self.procs[name].pid) for name in names}
        start = {name: cpu_seconds(pids) for name, pids in roots.items()}
        time.sleep(self.o.idle_s)
        return {
            name: 100 * (cpu_seconds(roots[name]) - start[name]) / self.o.idle_s for name in names
        }

    def targets(self) -> list[str]:
        return [DIRECT, UBERLLM] + ([LITELLM] if self.o.litellm else [])

    def run(self) -> dict:
        results: dict = {}
        for mode in self.o.modes:
            self.set_mode(mode)
            for concurrency in self.o.concurrency:
                for name in self.targets():
                    self.o.log(f"  {mode:8} c={concurrency:<4} {name:8} ...")
                    outcome = self.cell(name, concurrency)
                    results.setdefault(mode, {}).setdefault(str(concurrency), {})[name] = outcome
                    time.sleep(self.o.settle)  # let ledger writes of the cell finish
        return results


def run(options: Options, base_dir: Path) -> dict:
    bench = Bench(options, base_dir)
    try:
        bench.start()
        results = bench.run()
        return {"results": results, "litellm": bool(options.litellm), "idle": bench.idle()}
    finally:
        bench.stop()


def find_litellm(base_dir: Path) -> str | None:
    """The LiteLLM proxy executable: .venv-bench's, else one on PATH."""
    local = base_dir / ".venv-bench" / "bin" / "litellm"
    if local.exists():
        return str(local)
    return shutil.which("litellm")
