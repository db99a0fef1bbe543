"""evalsite settings: one module, driven by environment variables.

Embedded default: SQLite in EVALSITE_DATA_DIR with the django-q2 ORM broker on the same
database. Scale-out: DATABASE_URL (PostgreSQL) and EVALSITE_REDIS_URL (django-q2 Redis broker).
See docs/configuration.md for every variable.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from decimal import Decimal
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

from evalsite.core.pacing import DEFAULT_MAX_CONCURRENCY

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    value = env_str(name)
    if not value:
        return default
    return value.lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


DATA_DIR = Path(env_str("EVALSITE_DATA_DIR", ".evalsite")).expanduser().resolve()
# Private to its owner: the database holds live session keys and password hashes.
# `evalsite serve` tightens a data dir made before this (evalsite/management/commands/serve.py).
DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
REPORTS_DIR = DATA_DIR / "reports"
SUITES_DIR = Path(env_str("EVALSITE_SUITES_DIR", str(BASE_DIR / "examples"))).resolve()


def _secret_key() -> str:
    """The given key, else one generated once into the data dir (mode 0600) and reused."""
    given = env_str("EVALSITE_SECRET_KEY")
    if given:
        return given
    path = DATA_DIR / "secret_key"
    if not path.exists():
        _create_once(path, secrets.token_urlsafe(50))
    return path.read_text().strip()


def _create_once(path: Path, text: str) -> None:
    """Create `path` holding `text`, mode 0600, unless it exists. The file appears whole, so
    two processes starting at once read the same text (never an empty file)."""
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        with contextlib.suppress(FileExistsError):  # another process was first
            os.link(staged, path)
    finally:
        os.unlink(staged)


SECRET_KEY = _secret_key()
DEBUG = env_bool("EVALSITE_DEBUG")
ALLOWED_HOSTS = env_list("EVALSITE_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("EVALSITE_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_q",
    "evalsite",  # the project's own verbs: serve, worker, mcp
    "runs",
    "labels",
    "lab",  # the judge lab: pair sets, judge runs over them
]

MIDDLEWARE = [
    "evalsite.timing.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evalsite.navigation.nav",
            ],
        },
    }
]

# --- Database --------------------------------------------------------------------------
# SQLite: WAL, a busy timeout and IMMEDIATE transactions, so several writers (web, workers,
# CLI) queue for the lock instead of failing with "database is locked" (FIELD-NOTES.md).
SQLITE_PATH = DATA_DIR / "evalsite.sqlite3"
if env_str("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(env_str("DATABASE_URL"), conn_max_age=60)}
else:
    # Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the
    # database's mode, whatever the umask of the process that makes them.
    os.close(os.open(SQLITE_PATH, os.O_RDONLY | os.O_CREAT, 0o600))
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": SQLITE_PATH,  # type: ignore[typeddict-item]  # Django takes a Path
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file, not :memory:, so tests see the same locking as production.
            "TEST": {"NAME": str(DATA_DIR / "test.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Background work ---------------------------------------------------------------------
# django-q2 delivers at least once: `retry` must exceed `timeout` so a running task is not
# handed out a second time, and every task is idempotent and resumable.
Q_CLUSTER = {
    "name": "evalsite",
    "workers": int(env_str("EVALSITE_WORKERS", "2")),
    "timeout": 3600,
    "retry": 3900,
    "max_attempts": 3,
    "save_limit": 0,
    "catch_up": False,
    # How often an idle worker asks the ORM broker for a task: a run waits up to this long
    # to start (one cheap query a poll per worker process).
    "poll": 0.1,
    "label": "Background tasks",
}
# Calls in flight per model across a run (split between its shards).
EVALSITE_MAX_CONCURRENCY = int(env_str("EVALSITE_MAX_CONCURRENCY", str(DEFAULT_MAX_CONCURRENCY)))
# A claimed answer whose worker died goes back to pending after this many seconds.
EVALSITE_CLAIM_LEASE_S = float(env_str("EVALSITE_CLAIM_LEASE_S", "600"))
# The provider keys live on the worker hosts only (docs/scale-out.md): the web queues a run
# without checking its own environment for them; a worker without one fails the run.
EVALSITE_KEYS_ON_WORKERS = env_bool("EVALSITE_KEYS_ON_WORKERS")
# After SIGTERM or SIGINT a worker's cluster has this long to stop; what is left is killed.
EVALSITE_WORKER_STOP_GRACE_S = float(env_str("EVALSITE_WORKER_STOP_GRACE_S", "10"))

# Execution checks run in bubblewrap; without it they refuse to run unless this opt-out is
# set (docs/checks.md says what that gives up). At most this many run at once.
EVALSITE_UNSAFE_NO_SANDBOX = env_bool("EVALSITE_UNSAFE_NO_SANDBOX")
EVALSITE_CHECK_CONCURRENCY = int(env_str("EVALSITE_CHECK_CONCURRENCY", "2"))
# The share of pairs the labelling queue also gives to a second labeller (human-human
# agreement, SPEC §10.2).
EVALSITE_LABEL_OVERLAP = float(env_str("EVALSITE_LABEL_OVERLAP", "0.2"))
REDIS_URL = env_str("EVALSITE_REDIS_URL")
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- Auth ------------------------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
# Every login (the app's and the admin's) goes through the throttle: after this many failed
# logins for one username within the window, that username is refused until the window
# has passed (evalsite/login.py). Counted in the cache, per web process.
AUTHENTICATION_BACKENDS = ["evalsite.login.ThrottledBackend"]
EVALSITE_LOGIN_MAX_FAILURES = int(env_str("EVALSITE_LOGIN_MAX_FAILURES", "5"))
EVALSITE_LOGIN_LOCKOUT_S = int(env_str("EVALSITE_LOGIN_LOCKOUT_S", "900"))
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# --- Security headers ------------------------------------------------------------------
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "media-src": [CSP.SELF],  # a case's audio and video, from the run's media view
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# Behind TLS (a shared machine behind a proxy): secure cookies, HSTS and the redirect.
HTTPS = env_bool("EVALSITE_HTTPS")
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = 31536000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Uploads: suites are at most 5 MB (the suite loader refuses larger ones with a message).
DATA_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024

# --- Static files ----------------------------------------------------------------------
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Served straight from the app folders: a local tool needs no collectstatic step.
WHITENOISE_USE_FINDERS = True

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": env_str("EVALSITE_LOG_LEVEL", "WARNING")},
}

# --- MCP server (docs/mcp.md) --------------------------------------------------------------
# Suites an agent may run live under this folder; its cap per run is refused above the ceiling.
EVALSITE_MCP_SUITE_ROOT = Path(env_str("EVALSITE_MCP_SUITE_ROOT", str(SUITES_DIR))).resolve()
EVALSITE_MCP_MAX_COST_CEILING = Decimal(env_str("EVALSITE_MCP_MAX_COST_CEILING", "5.00"))
EVALSITE_MCP_MAX_COST = Decimal(env_str("EVALSITE_MCP_MAX_COST", "1.00"))
