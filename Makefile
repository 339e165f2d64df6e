# UberLLM developer commands. `make run` and `make test` work on a bare machine with Python 3.11.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# `make run PORT=8001 EMULATOR_PORT=8101`: the gateway's and the emulated providers' ports.
PORT ?= 8000
EMULATOR_PORT ?= 8100

.PHONY: run test lint format bench sizing activity-timings simulate agents-check fleet fleet-check venv deps dev-deps migrate clean

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.deps: requirements.txt | $(VENV)/bin/activate
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt | $(VENV)/bin/activate
	$(PIP) install -q -r requirements-dev.txt
	touch $@ $(VENV)/.deps

venv: $(VENV)/bin/activate
deps: $(VENV)/.deps
dev-deps: $(VENV)/.dev-deps

migrate: deps
	$(PY) manage.py migrate --noinput -v0

## Install, migrate, seed the demo, start emulated providers + gateway (+ worker and beat).
run: migrate
	$(PY) manage.py run_demo --port $(PORT) --emulator-port $(EMULATOR_PORT)

## Lint, then the whole test suite (DATABASE_URL / REDIS_URL select the stores).
test: dev-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q

lint: dev-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: dev-deps
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## Benchmarks (print figures; never part of the tests): routing decision, then the
## gateway's overhead vs direct (and LiteLLM, with `BENCH_ARGS=--with-litellm`).
bench: migrate
	$(PY) -m lab.core_bench
	$(PY) manage.py bench_overhead $(BENCH_ARGS)

## Sizing: req/s per gateway worker and per core, 1 and 2 workers, streamed and JSON
## replies, 3 runs each (docs/operations.md, "Sizing").
sizing: migrate
	$(PY) manage.py bench_sizing $(SIZING_ARGS)

## Dashboard reads at volume: `make activity-timings ORG=acme` (seed first with
## `manage.py seed_activity --organisation acme --rows 10000000`; docs/operations.md).
activity-timings: migrate
	$(PY) manage.py rollup_usage
	$(PY) manage.py activity_timings --organisation $(ORG) $(TIMINGS_ARGS)

## The fleet on one machine (PostgreSQL + Redis + nginx): run it, or run its test and
## print the figures (docs/operations.md, "Fleet").
fleet: migrate
	deploy/fleet.sh

fleet-check: dev-deps
	@test -n "$$DATABASE_URL" -a -n "$$REDIS_URL" || \
		{ echo "fleet-check needs DATABASE_URL (PostgreSQL) and REDIS_URL"; exit 2; }
	$(PY) -m pytest -q -s -m fleet tests/fleet

## Market simulator: every strategy on the calibrated market (see docs/simulator.md).
simulate: deps
	$(PY) manage.py simulate --scenario deepseek-v4.1-flash --seed 1 --requests 20000

## Real agents against a local gateway and the emulator: the anthropic and openai SDKs,
## and Claude Code itself (npm i -g @anthropic-ai/claude-code; skipped if absent).
agents-check: dev-deps
	$(PY) -m pytest -q tests/gateway/test_claude_code.py tests/gateway/test_messages_api.py \
		tests/gateway/test_reasoning_tools.py tests/gateway/test_codex_cli.py \
		tests/gateway/test_responses_api.py

clean:
	rm -rf $(VENV) .venv-bench var staticfiles .pytest_cache .ruff_cache
