"""Settings, all read from the environment (django-environ); see .env.example.

Production stores are PostgreSQL (``DATABASE_URL``) and Redis (``REDIS_URL``). Without
them the embedded defaults are a SQLite file and in-process equivalents, so
``make run`` works on a bare machine.
"""

import os
from datetime import timedelta
from pathlib import Path

import environ
from celery.schedules import crontab

from common.config import SettingsDict
from common.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if env.bool("UBERLLM_READ_DOT_ENV", default=True) and (BASE_DIR / ".env").exists():
    env.read_env(BASE_DIR / ".env")

# Run-time files of the embedded default: the SQLite database, the filesystem Celery
# broker, beat's schedule, the demo key, metrics and logs (another folder gives a
# second, separate `make run`, as the cold-start test does).
VAR_DIR = Path(env("UBERLLM_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env("DJANGO_SECRET_KEY", default="dev-only-insecure-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
CSRF_FAILURE_VIEW = "uberllm.urls.csrf_failure"  # JSON under /api/ and /v1/

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "axes",
    "csp",
    "drf_spectacular",
    "providers",
    "billing",
    "routing",
    "lab",
]

# The dashboard, admin and APIs go through this chain; the chat endpoints skip it (a lean
# ASGI handler, routing/gateway/asgi.py, mounted in uberllm/asgi.py).
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a locked-out login into the lockout page (docs/security.md).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "uberllm.urls"
ASGI_APPLICATION = "uberllm.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
# Persistent connections: the async views' database calls run in a thread pool, and
# opening a connection per call (a new server process on PostgreSQL) cost 3 ms of CPU
# per request (docs/benchmarks.md). Health checks drop a broken one before use.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=600)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if "postgresql" in DATABASES["default"]["ENGINE"]:
    # An unreachable server fails a request (and /readyz) in seconds, not minutes.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT_S", default=5)
    )
    # No JIT: the dashboard's reads are short, and PostgreSQL's cost-based JIT spent
    # 1.5 s compiling the staff spend report's subqueries to run them in 0.1 s
    # (docs/operations.md, "Activity at 10 million rows"). DATABASE_JIT=true restores it.
    server_options = [] if env.bool("DATABASE_JIT", default=False) else ["-c jit=off"]
    # work_mem (PostgreSQL's default 4MB): with 4MB the planner sorts the Usage page's
    # grouping of the recent Activity rows instead of hashing them (it expects ~17 k
    # groups, gets ~150): 40-56 ms instead of 20-35 ms. Per sort/hash node and
    # connection; DATABASE_WORK_MEM="" keeps the server's value.
    work_mem = env.str("DATABASE_WORK_MEM", default="16MB")
    if work_mem:
        server_options.append(f"-c work_mem={work_mem}")
    if server_options:
        DATABASES["default"]["OPTIONS"].setdefault("options", " ".join(server_options))
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL, a busy timeout and IMMEDIATE transactions let the gateway's writer threads,
    # the worker and beat share the file without "database is locked". Temporary tables
    # and statement journals in memory: no temporary file per write batch.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY;"
            ),
        }
    )
    # A file (not memory), so a second gateway process in the tests can open it; one per
    # test process, so concurrent test runs cannot clobber each other's database.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = str(
        VAR_DIR / f"test-db-{os.getpid()}.sqlite3"
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Celery: Redis when configured, else kombu's filesystem transport so a worker and beat
# still work across processes on a bare machine.
CELERY_BROKER_DIR = VAR_DIR / "celery-broker"
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    CELERY_BROKER_DIR.mkdir(exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR),
        "data_folder_out": str(CELERY_BROKER_DIR),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
    }
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_TASK_SOFT_TIME_LIMIT = 60
CELERY_TASK_TIME_LIMIT = 120
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)

# --- Web security (docs/security.md). Secure cookies, HSTS and the HTTPS redirect are
# on by default unless DEBUG is on or every allowed host is a local one (`make run`,
# the tests); each can be set explicitly from the environment.
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]", "testserver"}
RUNS_LOCALLY = all(host in LOCAL_HOSTS for host in ALLOWED_HOSTS)
SECURE_COOKIES = env.bool("UBERLLM_SECURE_COOKIES", default=not DEBUG and not RUNS_LOCALLY)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_COOKIES
SECURE_HSTS_SECONDS = env.int(
    "DJANGO_SECURE_HSTS_SECONDS", default=365 * 24 * 3600 if SECURE_COOKIES else 0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool(
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=SECURE_COOKIES
)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=SECURE_COOKIES)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
if env.bool("DJANGO_SECURE_PROXY_SSL_HEADER", default=False):
    # Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from
    # clients): only then may Django trust it.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp): scripts, styles, images and fonts from this site
# only; no inline script or style (the dashboard's are static files), no framing. The
# JSON API sends no HTML, so it gets no header.
CSP_SELF, CSP_NONE = "'self'", "'none'"
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/api/"],
    "DIRECTIVES": {
        "default-src": [CSP_SELF],
        "script-src": [CSP_SELF],
        "style-src": [CSP_SELF],
        "img-src": [CSP_SELF, "data:"],
        "font-src": [CSP_SELF],
        "connect-src": [CSP_SELF],
        "object-src": [CSP_NONE],
        "base-uri": [CSP_SELF],
        "form-action": [CSP_SELF],
        "frame-ancestors": [CSP_NONE],
    },
}

# Login throttling (django-axes), dashboard and admin alike: after
# UBERLLM_LOGIN_FAILURE_LIMIT failed logins for one username, or from one IP address,
# further attempts (right password included) get the lockout page for the cool-off.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env.bool("UBERLLM_LOGIN_THROTTLING", default=True)
AXES_FAILURE_LIMIT = env.int("UBERLLM_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("UBERLLM_LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "billing.views.lockout.lockout_response"
AXES_VERBOSE = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:activity"
LOGOUT_REDIRECT_URL = "login"

# Invitation mails. Development prints them on the console; production sets an SMTP URL
# (DJANGO_EMAIL_URL, e.g. smtp+tls://user:password@mail.example.com:587).
if env("DJANGO_EMAIL_URL", default=""):
    globals().update(env.email_url("DJANGO_EMAIL_URL"))
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = env("DJANGO_DEFAULT_FROM_EMAIL", default="UberLLM <noreply@localhost>")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").exists() else []

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "billing.drf.openai_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# The published schema (GET /api/v1/openapi.json, routing/openapi.py).
SPECTACULAR_SETTINGS = {
    "TITLE": "UberLLM API",
    "DESCRIPTION": "OpenAI- and Anthropic-compatible LLM gateway (docs/api.md).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "PREPROCESSING_HOOKS": ["routing.openapi.only_public_api"],
    # The discriminator of /api/v1/activity rows (billing/apis.py).
    "ENUM_NAME_OVERRIDES": {"CallKindEnum": ["call"], "RejectedKindEnum": ["rejected"]},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "routing.openapi.add_lean_paths",
    ],
}

# LOG_FORMAT=json (one JSON object a line, for a log pipeline) or text (for a terminal);
# both carry the request's generation id (common/logs.py, docs/operations.md).
LOG_FORMAT = env("LOG_FORMAT", default="text")
LOGGING = logging_config(LOG_FORMAT, env("LOG_LEVEL", default="WARNING"))


# --- UberLLM product settings (fixed waits of the product are settings, so tests are fast)
# The product's knobs; read only through each app's typed config (common/config.py).
UBERLLM = SettingsDict(
    {
        # Largest accepted chat request body; larger gets HTTP 413 before it is read (from
        # Content-Length) or as soon as a chunked body passes it.
        "MAX_BODY_BYTES": env.int("UBERLLM_MAX_BODY_BYTES", default=10 * 1024 * 1024),
        # Deepest JSON nesting accepted in a chat or Messages body (the body itself is level
        # 1); deeper is a 400 naming the field. Keep it well under 254: the upstream encoder
        # (orjson) refuses more, and the protocol translations add a few levels.
        "MAX_JSON_DEPTH": env.int("UBERLLM_MAX_JSON_DEPTH", default=128),
        # CORS for the API (/api/ and /v1/, never the dashboard): the origins whose pages
        # may call it from a browser; "*" is any origin (API keys are bearer tokens, never
        # cookies, and no credentials are allowed), an empty list turns CORS off.
        "CORS_ALLOWED_ORIGINS": env.list("UBERLLM_CORS_ALLOWED_ORIGINS", default=["*"]),
        # How long a browser may cache a preflight's answer (Chromium caps it at 7200 s).
        "CORS_MAX_AGE_S": env.int("UBERLLM_CORS_MAX_AGE_S", default=7200),
        # A chat body larger than this does its per-message work (validation, token estimate,
        # prefix hashes) in a worker thread, so the event loop keeps relaying other streams.
        "OFF_LOOP_BODY_BYTES": env.int("UBERLLM_OFF_LOOP_BODY_BYTES", default=64 * 1024),
        # Admission control: chat calls in flight per gateway process; past it a JSON 503
        # with Retry-After answers at once instead of queueing without bound.
        "MAX_INFLIGHT_CALLS": env.int("UBERLLM_MAX_INFLIGHT_CALLS", default=2000),
        # ... and ledger items (pending rows, outcomes) queued but not written yet: past it
        # (the database slower than the traffic, or away for long) new calls get the same 503
        # instead of the backlog growing in memory until rows would be dropped.
        "LEDGER_BACKLOG_MAX": env.int("UBERLLM_LEDGER_BACKLOG_MAX", default=50_000),
        # Upstream timeouts (seconds): connect, wait for response headers, wait for the first
        # token, and the longest gap between two chunks once streaming.
        "UPSTREAM_CONNECT_TIMEOUT_S": env.float("UBERLLM_UPSTREAM_CONNECT_TIMEOUT_S", default=5.0),
        "UPSTREAM_FIRST_TOKEN_TIMEOUT_S": env.float(
            "UBERLLM_UPSTREAM_FIRST_TOKEN_TIMEOUT_S", default=180.0
        ),
        "UPSTREAM_IDLE_TIMEOUT_S": env.float("UBERLLM_UPSTREAM_IDLE_TIMEOUT_S", default=60.0),
        # An attempt at an endpoint whose typical TTFT in the bucket is t waits for its first
        # token max(FLOOR, FACTOR x t) seconds (never more than the flat timeout above), so
        # a hanging provider costs seconds (issue 10; routing.core.timeouts).
        "ROUTING_FIRST_TOKEN_FLOOR_S": env.float(
            "UBERLLM_ROUTING_FIRST_TOKEN_FLOOR_S", default=20.0
        ),
        "ROUTING_FIRST_TOKEN_FACTOR": env.float("UBERLLM_ROUTING_FIRST_TOKEN_FACTOR", default=4.0),
        "UPSTREAM_MAX_CONNECTIONS": env.int("UBERLLM_UPSTREAM_MAX_CONNECTIONS", default=1000),
        # Retries (R4): attempts in all, across distinct endpoints.
        "MAX_ATTEMPTS": env.int("UBERLLM_MAX_ATTEMPTS", default=4),
        # R2.7: an endpoint that refused a call is unusable for FIRST_WINDOW_S, doubling with
        # each consecutive refusal up to UNUSABLE_WINDOW_S (15 minutes); a served call resets.
        "UNUSABLE_FIRST_WINDOW_S": env.float("UBERLLM_UNUSABLE_FIRST_WINDOW_S", default=30.0),
        "UNUSABLE_WINDOW_S": env.float("UBERLLM_UNUSABLE_WINDOW_S", default=900.0),
        # A conversation's request is priced with this many expected follow-up turns (their
        # prompt a cache read where it is served now), so it leaves a reseller with dear
        # cache reads (docs/simulator.md, finding 1). 0 prices each request alone.
        "FOLLOWUP_TURNS": env.float("UBERLLM_FOLLOWUP_TURNS", default=2.0),
        # A first turn is priced with the share of its API key's first turns of that size
        # that a second turn followed, times the follow-ups above (docs/routing.md).
        "ROUTING_FIRST_TURN_FOLLOWUPS": env.bool(
            "UBERLLM_ROUTING_FIRST_TURN_FOLLOWUPS", default=True
        ),
        # R2.4 slow tail (docs/routing.md): 0 = median only (R2.2); w > 0 also requires
        # typical + w x (p90 - typical) within 2x of the best, so stalling providers lose
        # long prompts (a better p90, at a higher cost: docs/simulator.md).
        "ROUTING_TAIL_WEIGHT": env.float("UBERLLM_ROUTING_TAIL_WEIGHT", default=0.0),
        # R2.4 "fast enough": typical TTFT within this ratio of the fastest endpoint's, or
        # under this many seconds. The defaults are the product's rule; a wider band trades
        # TTFT for price (docs/simulator.md, "Realistic cache speedups").
        "ROUTING_FAST_ENOUGH_RATIO": env.float("UBERLLM_ROUTING_FAST_ENOUGH_RATIO", default=2.0),
        "ROUTING_FAST_ENOUGH_UNDER_S": env.float(
            "UBERLLM_ROUTING_FAST_ENOUGH_UNDER_S", default=1.0
        ),
        # The same bound for prompts of 32k tokens and more; unset (default): the one above.
        # 3-4 s lowers cost on long prompts without touching short ones (docs/routing.md).
        "ROUTING_FAST_ENOUGH_UNDER_S_LONG": env.float(
            "UBERLLM_ROUTING_FAST_ENOUGH_UNDER_S_LONG", default=None
        ),
        # O3: a 429 teaches the endpoint a concurrency cap (0.9 x this process's calls in
        # flight there); while reached, its traffic spills over to the next choice.
        "ROUTING_CONCURRENCY_CAPS": env.bool("UBERLLM_ROUTING_CONCURRENCY_CAPS", default=True),
        "ROUTING_TOOL_CALL_CHECKS": env.bool("UBERLLM_ROUTING_TOOL_CALL_CHECKS", default=True),
        # Conversation placement by horizon (issue 43, docs/routing.md): R2.4 on the warm
        # turns; a warm conversation moves only when >= MOVE_MIN_SAVING cheaper elsewhere.
        "ROUTING_CONVERSATION_HORIZON": env.bool(
            "UBERLLM_ROUTING_CONVERSATION_HORIZON", default=True
        ),
        "ROUTING_MOVE_MIN_SAVING": env.float("UBERLLM_ROUTING_MOVE_MIN_SAVING", default=0.2),
        # Probes stop for the UTC day once they cost this much (USD, all models); 0 = no limit.
        "PROBE_DAILY_BUDGET_USD": env.float("UBERLLM_PROBE_DAILY_BUDGET_USD", default=25.0),
        # Probes by volume: the probes of a model's size bucket over the last window cost at
        # most this share of what its customers paid for that size in the same window
        # (routing/probes.py within_volume); 0 = off.
        "PROBE_SPEND_SHARE": env.float("UBERLLM_PROBE_SPEND_SHARE", default=0.25),
        "PROBE_SPEND_WINDOW_S": env.float("UBERLLM_PROBE_SPEND_WINDOW_S", default=3600.0),
        # Probe only where the answer could change a pick: skip endpoints dearer than the
        # current pick and not the fastest (docs/routing.md "Probes by need").
        "PROBE_BY_NEED": env.bool("UBERLLM_PROBE_BY_NEED", default=True),
        # R2.6: share of requests sent to an endpoint with too little speed data.
        "EXPLORATION_RATE": env.float("UBERLLM_EXPLORATION_RATE", default=0.05),
        # Rolling window of TTFT samples kept per endpoint and prompt-size bucket.
        "SPEED_WINDOW_SIZE": env.int("UBERLLM_SPEED_WINDOW_SIZE", default=50),
        # Samples older than this no longer count (seconds).
        "SPEED_MAX_AGE_S": env.float("UBERLLM_SPEED_MAX_AGE_S", default=6 * 3600.0),
        # Namespace of keys in the shared store (Redis), so test runs cannot collide.
        "SHARED_KEY_PREFIX": env("UBERLLM_SHARED_KEY_PREFIX", default="ullm"),
        # R3 hedging of long streaming prompts: wait before the second leg (32k-128k), the
        # size thresholds, and the daily budget (USD) that pays for the cancelled legs.
        "HEDGE_DELAY_S": env.float("UBERLLM_HEDGE_DELAY_S", default=1.0),
        # R3.1 (issue 43): "late" = after max(HEDGE_DELAY_S, factor x the primary's typical
        # TTFT for this request); "flat" = after HEDGE_DELAY_S (the seed's trigger)
        "HEDGE_TRIGGER": env.str("UBERLLM_HEDGE_TRIGGER", default="late"),
        "HEDGE_LATE_FACTOR": env.float("UBERLLM_HEDGE_LATE_FACTOR", default=2.0),
        # 0: the hedge partner is the next fast-enough choice in plan order (the cheapest);
        # > 0: the cheapest whose expected TTFT, stalls included, is within this x the best's
        "HEDGE_PARTNER_SLACK": env.float("UBERLLM_HEDGE_PARTNER_SLACK", default=0.0),
        "HEDGE_DELAYED_FROM_TOKENS": env.int("UBERLLM_HEDGE_DELAYED_FROM_TOKENS", default=32_000),
        "HEDGE_IMMEDIATE_FROM_TOKENS": env.int(
            "UBERLLM_HEDGE_IMMEDIATE_FROM_TOKENS", default=128_000
        ),
        "HEDGE_DAILY_BUDGET_USD": env.float("UBERLLM_HEDGE_DAILY_BUDGET_USD", default=5.0),
        # The daily hedge budget is paced over the UTC day: by time t at most
        # budget x (t + burst) / 24 h is spent; 86400 or more = all of it from 00:00 (greedy).
        "HEDGE_BUDGET_BURST_S": env.float("UBERLLM_HEDGE_BUDGET_BURST_S", default=3600.0),
        # A streamed reply starts (200 and its SSE headers) once a provider has answered 200,
        # while it prefills, so the first token leaves in one write; false: only with the
        # first token (or the keep-alive below), so that a call failing on every provider
        # before its first token answers an HTTP error status instead of an error chunk.
        "EARLY_STREAM_START": env.bool("UBERLLM_EARLY_STREAM_START", default=True),
        # While no first token has arrived, answer 200 after this long and keep the stream
        # alive with SSE comments (": PROCESSING") every KEEPALIVE_INTERVAL_S.
        "KEEPALIVE_AFTER_S": env.float("UBERLLM_KEEPALIVE_AFTER_S", default=2.0),
        "KEEPALIVE_INTERVAL_S": env.float("UBERLLM_KEEPALIVE_INTERVAL_S", default=3.0),
        # R5 probes: period, prompt sizes (tokens), concurrency and timeout per probe.
        "PROBE_PERIOD_S": env.float("UBERLLM_PROBE_PERIOD_S", default=300.0),
        "PROBE_SIZES": env.list("UBERLLM_PROBE_SIZES", cast=int, default=[20_000, 60_000, 150_000]),
        "PROBE_CONCURRENCY": env.int("UBERLLM_PROBE_CONCURRENCY", default=4),
        "PROBE_TIMEOUT_S": env.float("UBERLLM_PROBE_TIMEOUT_S", default=90.0),
        # Retention: probe results are kept this many days (speed samples: SPEED_MAX_AGE_S).
        "PROBE_RESULT_MAX_AGE_DAYS": env.int("UBERLLM_PROBE_RESULT_MAX_AGE_DAYS", default=30),
        # Retention of the ledger (billing.retention): Activity rows (and their attempts) of
        # whole months older than this many days are archived to gzip JSON lines under
        # ACTIVITY_ARCHIVE_DIR (one file per organisation and month), then deleted; the
        # rollups keep those months on the Usage page. 0: keep every row forever.
        "ACTIVITY_RETENTION_DAYS": env.int("UBERLLM_ACTIVITY_RETENTION_DAYS", default=0),
        "ACTIVITY_ARCHIVE_DIR": env(
            "UBERLLM_ACTIVITY_ARCHIVE_DIR", default=str(VAR_DIR / "activity-archive")
        ),
        # Calls in flight checkpoint their Activity row this often (alive + tokens delivered);
        # the reconciler (every RECONCILE_EVERY_S) closes a pending row whose last beat is
        # older than RECONCILE_AFTER_S (a dead process), billing what was delivered.
        "LEDGER_HEARTBEAT_S": env.float("UBERLLM_LEDGER_HEARTBEAT_S", default=30.0),
        # A streaming call's billed numbers (tokens delivered, usage once reported) are
        # checkpointed this often, all of a process's calls in one ledger batch; until the
        # provider's usage comes a checkpoint also bills the tokens due within the lead at
        # the stream's rate, so a killed process's row covers what its clients received.
        "LEDGER_CHECKPOINT_S": env.float("UBERLLM_LEDGER_CHECKPOINT_S", default=1.0),
        "LEDGER_CHECKPOINT_LEAD_S": env.float("UBERLLM_LEDGER_CHECKPOINT_LEAD_S", default=1.5),
        # A call is first checkpointed once it has run this long: most calls end sooner
        # (a checkpoint of each would be one more ledger write per call); a worker killed
        # meanwhile leaves at most this much of a stream unbilled.
        "LEDGER_CHECKPOINT_AFTER_S": env.float("UBERLLM_LEDGER_CHECKPOINT_AFTER_S", default=1.0),
        # Each gateway process writes its ledger rows at most once per this interval (the
        # openings and endings of that moment in one transaction): fewer, larger writes under
        # load, at the price of rows landing (and lost with a killed process) that much later.
        "LEDGER_FLUSH_INTERVAL_S": env.float("UBERLLM_LEDGER_FLUSH_INTERVAL_S", default=0.2),
        # Speed samples likewise (this process's routing learns at once; the others re-read
        # the database every SPEED_CACHE_TTL_S).
        "SPEED_SAMPLE_FLUSH_INTERVAL_S": env.float(
            "UBERLLM_SPEED_SAMPLE_FLUSH_INTERVAL_S", default=0.5
        ),
        "RECONCILE_AFTER_S": env.float("UBERLLM_RECONCILE_AFTER_S", default=90.0),
        "RECONCILE_EVERY_S": env.float("UBERLLM_RECONCILE_EVERY_S", default=30.0),
        # In-process caches in front of the shared stores (seconds).
        "CATALOG_CACHE_TTL_S": env.float("UBERLLM_CATALOG_CACHE_TTL_S", default=5.0),
        # A request refused (4xx) for something a catalog snapshot older than the TTL does not
        # know (a model, provider or endpoint added while idle) waits this long at most for
        # the reload before the refusal stands (routing.catalog.CatalogCache).
        "CATALOG_RELOAD_WAIT_S": env.float("UBERLLM_CATALOG_RELOAD_WAIT_S", default=2.0),
        "API_KEY_CACHE_TTL_S": env.float("UBERLLM_API_KEY_CACHE_TTL_S", default=5.0),
        # Hard spend limits (billing.limits, docs/security.md "Spend and rate limits"): a
        # request reserves its worst-case cost (prompt estimate x SPEND_PROMPT_MARGIN +
        # max_tokens, or SPEND_DEFAULT_MAX_TOKENS sent upstream as max_tokens when the
        # request has none, at the dearest endpoint of its plan) and settles to the real
        # cost when it ends. A reservation a crashed process never settled expires after
        # SPEND_RESERVATION_TTL_S (so must a call longer than that: it is then no longer held).
        "SPEND_DEFAULT_MAX_TOKENS": env.int("UBERLLM_SPEND_DEFAULT_MAX_TOKENS", default=4096),
        "SPEND_PROMPT_MARGIN": env.float("UBERLLM_SPEND_PROMPT_MARGIN", default=1.25),
        "SPEND_RESERVATION_TTL_S": env.float("UBERLLM_SPEND_RESERVATION_TTL_S", default=900.0),
        "SPEED_CACHE_TTL_S": env.float("UBERLLM_SPEED_CACHE_TTL_S", default=1.0),
        # Admin-entered upstream URLs on loopback/private addresses (the emulator needs it).
        "ALLOW_PRIVATE_UPSTREAMS": env.bool("UBERLLM_ALLOW_PRIVATE_UPSTREAMS", default=False),
        # Fernet keys encrypting provider credentials at rest, comma-separated: the first
        # encrypts, all decrypt (rotation). Unset: a key derived from DJANGO_SECRET_KEY
        # (development only; `check --deploy` flags it). docs/security.md.
        "CREDENTIAL_KEYS": env.list("UBERLLM_CREDENTIAL_KEYS", default=[]),
        # How long an invitation link to join an organisation stays valid (hours).
        "INVITATION_MAX_AGE_H": env.float("UBERLLM_INVITATION_MAX_AGE_H", default=72.0),
        # At shutdown, after the requests in flight have finished (uvicorn's
        # --timeout-graceful-shutdown is the drain timeout), wait this long for their ledger
        # and learning writes.
        "DRAIN_BACKGROUND_TIMEOUT_S": env.float("UBERLLM_DRAIN_BACKGROUND_TIMEOUT_S", default=30.0),
        # The gateway process's garbage-collector thresholds (gc.set_threshold), set at startup
        # after gc.freeze: the calls in flight keep tens of thousands of young objects alive,
        # which Python's default (700, 10, 10) walks again and again and promotes to the older
        # generations (loop stalls of 10-100 ms at 128 streams; docs/benchmarks.md, round 20).
        # Empty: Python's defaults.
        "GC_THRESHOLDS": tuple(
            env.list("UBERLLM_GC_THRESHOLDS", cast=int, default=[50_000, 10, 10])
        ),
        # OpenTelemetry traces: off, console or otlp (OTEL_EXPORTER_OTLP_ENDPOINT).
        "TRACING": env("UBERLLM_TRACING", default="off"),
        # Bearer token a Prometheus scraper sends to /metrics; empty: /metrics answers 404.
        "METRICS_TOKEN": env("UBERLLM_METRICS_TOKEN", default=""),
    }
)

# Celery beat: crontab/interval entries expire after one period, so a late run (beat or
# worker restarted) is dropped instead of piling up.
CELERY_BEAT_SCHEDULE = {
    # R5: probe every endpoint at ~20k/60k/150k tokens every PROBE_PERIOD_S.
    "probe-endpoints": {
        "task": "routing.probe_endpoints",
        "schedule": UBERLLM["PROBE_PERIOD_S"],
        "options": {"expires": UBERLLM["PROBE_PERIOD_S"]},
    },
    # Retention: speed samples past SPEED_MAX_AGE_S, old probe results (batched deletes).
    "prune-history": {
        "task": "routing.prune_history",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
    # Metrics: the broker's queue lengths (uberllm_queue_size).
    "sample-queue-sizes": {
        "task": "routing.sample_queue_sizes",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
    # Cold start (issue 10): endpoints without speed data are probed within a minute.
    "probe-cold-endpoints": {
        "task": "routing.probe_cold_endpoints",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    # Spend alerts (80% / 100% of a limit) whose email or webhook failed: retried.
    "spend-alerts-deliver": {
        "task": "billing.spend_alerts_deliver",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    # Ledger: close rows a crashed gateway process left pending.
    "activity-reconcile": {
        "task": "billing.activity_reconcile",
        "schedule": UBERLLM["RECONCILE_EVERY_S"],
        "options": {"expires": UBERLLM["RECONCILE_EVERY_S"]},
    },
    # Ledger: roll finished days into the daily usage rollups (billing.rollups).
    "usage-rollup": {
        "task": "billing.usage_rollup",
        "schedule": crontab(minute=20),
        "options": {"expires": 3600},
    },
    # Ledger retention: archive then delete Activity past ACTIVITY_RETENTION_DAYS (a no-op
    # at 0); at most ~1 M rows a run, so a first run on a large ledger spreads over hours.
    "activity-archive": {
        "task": "billing.activity_archive",
        "schedule": crontab(minute=40),
        "options": {"expires": 3600},
    },
    # Opt-in body logging: delete bodies past each organisation's retention days.
    "call-bodies-purge": {
        "task": "billing.call_bodies_purge",
        "schedule": crontab(minute=50),
        "options": {"expires": 3600},
    },
    # R3.4: open each UTC day's hedge budget at 00:00 (and every hour, harmlessly).
    "hedge-budget-open-day": {
        "task": "routing.hedge_budget_open_day",
        "schedule": crontab(minute=0),
        "options": {"expires": 3600},
    },
}
