"""Django settings. Every value comes from an environment variable (see docs/settings.md)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import plotly

from console import devcluster_secure
from console.connect_config import load_connect_clusters
from console.database import database_settings
from console.env import env_bool, env_choice, env_float, env_int, env_list, env_pairs, env_str
from console.gateway.config import ClusterConfig, load_clusters
from console.private import private_dir, write_private

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = private_dir(Path(env_str("CONSOLE_VAR_DIR", str(BASE_DIR / "var"))))  # 0700 (console/private.py)


def _secret_key() -> str:
    configured = env_str("CONSOLE_SECRET_KEY", "")
    if configured:
        return configured
    # A key generated once per installation, so `make run` needs no configuration.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        write_private(path, secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("CONSOLE_DEBUG", False)
ALLOWED_HOSTS = env_list("CONSOLE_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CONSOLE_CSRF_TRUSTED_ORIGINS", [])

# HTTPS, usually terminated by a proxy in front of the console. All off by default: `make run` is plain
# http on loopback. The proxy's headers are believed only with CONSOLE_BEHIND_PROXY, since without a
# proxy any client could send them.
CONSOLE_BEHIND_PROXY = env_bool("CONSOLE_BEHIND_PROXY", False)
CONSOLE_PROXY_COUNT = env_int("CONSOLE_PROXY_COUNT", 1, minimum=1)
CONSOLE_PROXY_CLIENT_IP_META = "HTTP_" + env_str("CONSOLE_PROXY_CLIENT_IP_HEADER", "X-Forwarded-For").upper().replace("-", "_")
if CONSOLE_BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + env_str("CONSOLE_PROXY_SSL_HEADER", "X-Forwarded-Proto").upper().replace("-", "_"),
                               "https")
SECURE_SSL_REDIRECT = env_bool("CONSOLE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers' health checks often speak plain http
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("CONSOLE_SECURE_COOKIES", False)
SECURE_HSTS_SECONDS = env_int("CONSOLE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CONSOLE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("CONSOLE_HSTS_PRELOAD", False)
# Sessions end after CONSOLE_SESSION_IDLE_SECONDS without a request, and CONSOLE_SESSION_MAX_AGE_SECONDS
# after the login whatever the activity (console/sessions.py).
CONSOLE_SESSION_IDLE_SECONDS = env_int("CONSOLE_SESSION_IDLE_SECONDS", 8 * 3600, minimum=60)
CONSOLE_SESSION_MAX_AGE_SECONDS = env_int("CONSOLE_SESSION_MAX_AGE_SECONDS", 7 * 24 * 3600, minimum=60)
SESSION_COOKIE_AGE = CONSOLE_SESSION_MAX_AGE_SECONDS
# Database sessions, read in one prepared statement per request (console/session_store.py).
SESSION_ENGINE = "console.session_store"

# The watcher's processes (`manage.py watch`, its sampling process) serve no page: they do not load
# daphne's web server (Twisted, a large import for a process that serves nothing). CONSOLE_PROCESS=watcher is set for them.
WATCHER_PROCESS = env_str("CONSOLE_PROCESS", "") == "watcher"
INSTALLED_APPS = [
    *([] if WATCHER_PROCESS else ["daphne"]),
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "channels",
    "axes",
    "console",
    "brokers_app",
    "topics_app",
    "consumers_app",
    "analytics",
    "security_app",
    "alerts_app",
    "connect_app",
    "transactions_app",
]

MIDDLEWARE = [
    "console.middleware.ServerTimingMiddleware",
    "console.request_context.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.sessions.SessionLifetimeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "console.csp.ContentSecurityPolicyMiddleware",
    "console.middleware.LoginRequiredMiddleware",
    "console.error_responses.ConsoleErrorMiddleware",
    # Last, as django-axes asks: it turns a login refused for a lockout into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "console.urls"
ASGI_APPLICATION = "console.asgi.application"

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
                "console.context.console_context",
            ],
        },
    },
]

# SQLite by default; on PostgreSQL a bounded connection pool per process (console/database.py).
DATABASES = {"default": database_settings(f"sqlite:///{VAR_DIR / 'console.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Login throttling (console/throttle.py): django-axes refuses logins for a user name, and from a
# client address, that failed CONSOLE_LOGIN_FAILURE_LIMIT times, until CONSOLE_LOGIN_COOLOFF_SECONDS
# after the last counted failure. Its backend comes first: it refuses before any password is checked.
# Local accounts: Django's ModelBackend, its signed-in user read in one prepared statement (console/user_backend.py).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "console.user_backend.ModelBackend"]
CONSOLE_LOGIN_FAILURE_LIMIT = env_int("CONSOLE_LOGIN_FAILURE_LIMIT", 10, minimum=1)
CONSOLE_LOGIN_COOLOFF_SECONDS = env_int("CONSOLE_LOGIN_COOLOFF_SECONDS", 900, minimum=1)
AXES_ENABLED = env_bool("CONSOLE_LOGIN_THROTTLING", True)
AXES_FAILURE_LIMIT = CONSOLE_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=CONSOLE_LOGIN_COOLOFF_SECONDS)
# A user name is locked from the address that guessed it, and an address for every name: an attacker
# cannot lock a real user out of the console from elsewhere, nor try many names from one address.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], ["ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Refusals during a lockout are not counted: it ends at a time the user can be told.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "console.throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "console.request_context.client_ip"  # the audit log's address, proxy rules included
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
LOGIN_URL = "/login/"
# The role of a logged-in user with no role group and no role binding: `viewer` (any user may look,
# as a small team expects) or `none` (deny by default, for consoles shared by teams with scoped roles).
CONSOLE_DEFAULT_ROLE = env_choice("CONSOLE_DEFAULT_ROLE", "viewer", ("viewer", "operator", "admin", "none"))
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
# Plotly.js comes from the plotly package on PyPI (installed with the requirements), never a CDN:
# pages load it as a static file, self-contained reports inline it.
PLOTLY_JS_DIR = Path(plotly.__file__).parent / "package_data"
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", PLOTLY_JS_DIR)]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6380/0")
# Websockets (console/socket_guard.py, console/socket_limits.py): each open socket's login is checked
# again this often, and per user at most so many sockets, running message scans and live tails, counted
# across the web processes in Redis.
CONSOLE_WS_RECHECK_SECONDS = env_float("CONSOLE_WS_RECHECK_SECONDS", 2.0, minimum=0.1)
CONSOLE_WS_MAX_SOCKETS_PER_USER = env_int("CONSOLE_WS_MAX_SOCKETS_PER_USER", 50, minimum=1)
CONSOLE_WS_MAX_SCANS_PER_USER = env_int("CONSOLE_WS_MAX_SCANS_PER_USER", 3, minimum=1)
CONSOLE_WS_MAX_TAILS_PER_USER = env_int("CONSOLE_WS_MAX_TAILS_PER_USER", 3, minimum=1)
# Redis connections each web process's Channels layer holds at most, and seconds a call waits for a
# free one (console/channel_layer.py): a reconnect storm waits its turn instead of failing.
CONSOLE_CHANNEL_LAYER_MAX_CONNECTIONS = env_int("CONSOLE_CHANNEL_LAYER_MAX_CONNECTIONS", 50, minimum=2)
CONSOLE_CHANNEL_LAYER_POOL_WAIT = env_float("CONSOLE_CHANNEL_LAYER_POOL_WAIT", 10.0, minimum=0.1)
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "console.channel_layer.WaitingRedisChannelLayer",
        # group_expiry: the group's members are the web processes' live hubs, which renew their
        # membership well within it (console/live_hub.py), so a process that died drops out soon.
        "CONFIG": {"hosts": [REDIS_URL], "capacity": 200, "expiry": 30, "group_expiry": 300,
                   "max_connections": CONSOLE_CHANNEL_LAYER_MAX_CONNECTIONS, "pool_wait": CONSOLE_CHANNEL_LAYER_POOL_WAIT},
    }
}

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Spark runs go to their own queue, served by one worker that keeps a warm session (Procfile "analytics").
CELERY_TASK_ROUTES = {"analytics.tasks.run_analytics": {"queue": "analytics"}}
CELERY_BEAT_SCHEDULE = {
    "celery-heartbeat": {"task": "console.tasks.heartbeat", "schedule": 10.0},
    # A reassignment job whose worker died (its lease ran out) is taken over by another worker.
    "reassignment-watchdog": {"task": "brokers_app.tasks.reassignment_watchdog", "schedule": 5.0},
    "analytics-due-reports": {"task": "analytics.tasks.due_reports", "schedule": 30.0},
    "analytics-lost-runs": {"task": "analytics.tasks.fail_lost_runs", "schedule": 60.0},
    "balance-watch": {"task": "brokers_app.tasks.balance_watch", "schedule": env_float("BALANCE_WATCH_INTERVAL", 180.0, minimum=5.0)},
    # The timeline's retention (TIMELINE_RETENTION_DAYS, TIMELINE_MAX_ROWS below).
    "events-retention": {"task": "brokers_app.tasks.prune_events", "schedule": env_float("TIMELINE_PRUNE_INTERVAL", 600.0, minimum=5.0)},
    "rebalances-retention": {"task": "consumers_app.tasks.prune_rebalances",
                             "schedule": env_float("TIMELINE_PRUNE_INTERVAL", 600.0, minimum=5.0)},
    # Alert deliveries whose next attempt is due and that no worker holds (a worker restarted, the
    # Celery broker lost the message) are queued again (alerts_app/delivery.py).
    "alert-deliveries-sweep": {"task": "alerts_app.tasks.sweep_deliveries",
                               "schedule": env_float("ALERTS_DELIVERY_SWEEP_INTERVAL", 5.0, minimum=1.0)},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first, so an anonymous request gets 401 with WWW-Authenticate rather than 403.
        "console.tokens.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Each view declares its action per method (`actions = {"GET": "topic.view", ...}`); undeclared is refused.
    "DEFAULT_PERMISSION_CLASSES": ["console.auth.ActionPermission"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],  # bodies are typed JSON (console/api_edge.py)
    "DEFAULT_SCHEMA_CLASS": "console.api_edge.ConsoleAutoSchema",
    "EXCEPTION_HANDLER": "console.error_responses.api_exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "URL_FORMAT_OVERRIDE": None,  # ?format= belongs to the messages export (json, jsonl, csv)
}
# API tokens older than this are refused (console/tokens.py; manage.py rotatetoken NAME makes a new one); 0: never.
CONSOLE_API_TOKEN_TTL_HOURS = env_int("CONSOLE_API_TOKEN_TTL_HOURS", 90 * 24, minimum=0)
# A secret that opens /metrics only (Prometheus: `authorization: Bearer <secret>`); empty: none.
CONSOLE_METRICS_TOKEN = env_str("CONSOLE_METRICS_TOKEN", "")
SPECTACULAR_SETTINGS = {
    "TITLE": "Kafka console API",
    "VERSION": "1",
    "SERVE_PERMISSIONS": ["console.auth.ActionPermission"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "console.api_edge.strict_bodies"],
}

# Kafka clusters: KAFKA_CLUSTERS_FILE (JSON), or one cluster from KAFKA_* variables;
# the default is the local development cluster started by `manage.py devcluster up`.
DEVCLUSTER_BASE_PORT = env_int("DEVCLUSTER_BASE_PORT", 9092, minimum=1024)
# DEVCLUSTER_SECURE=1 (`SECURE=1 make run`): TLS, SASL and ACLs (console/devcluster_secure.py), in a
# directory of its own, with the console's login for Kafka's tools in DEVCLUSTER_CLIENT_CONFIG.
DEVCLUSTER_SECURE = env_bool("DEVCLUSTER_SECURE", False)
DEVCLUSTER_DIR = Path(env_str("DEVCLUSTER_DIR", str(VAR_DIR / ("kafka-secure" if DEVCLUSTER_SECURE else "devcluster"))))
DEVCLUSTER_CLIENT_CONFIG = Path(env_str("DEVCLUSTER_CLIENT_CONFIG", str(VAR_DIR / "secure" / "client.properties")))
DEVCLUSTER_LOG_LEVEL = env_str("DEVCLUSTER_LOG_LEVEL", "WARN")
# More JVM options for the local cluster's nodes and its Connect worker (e.g. the suite's
# -XX:TieredStopAtLevel=1: nodes that live minutes spend more CPU compiling than they save).
DEVCLUSTER_JVM_OPTS = env_str("DEVCLUSTER_JVM_OPTS", "").split()
# Kafka's jars (`make kafka-jars`): the gateway reads the request formats kafka-python lacks from kafka-clients.
KAFKA_LIB_DIR = Path(env_str("KAFKA_LIB_DIR", str(BASE_DIR / "kafka" / "lib")))
KAFKA_CLUSTERS = load_clusters(
    DEVCLUSTER_BASE_PORT, devcluster_secure.console_connection(DEVCLUSTER_DIR) if DEVCLUSTER_SECURE else None)
KAFKA_REQUEST_TIMEOUT = env_float("KAFKA_REQUEST_TIMEOUT", 5.0, minimum=0.5)
# The one-node cluster "backup" (`manage.py devcluster up --backup`), MirrorMaker 2's target in `make run`'s
# demo, 200 ports above the local cluster's; DEVCLUSTER_BACKUP=1 (make run) shows it beside the local cluster.
DEVCLUSTER_BACKUP_PORT = env_int("DEVCLUSTER_BACKUP_PORT", DEVCLUSTER_BASE_PORT + 200, minimum=1024)
DEVCLUSTER_BACKUP_DIR = Path(env_str("DEVCLUSTER_BACKUP_DIR", str(VAR_DIR / "backup")))
DEVCLUSTER_BACKUP = env_bool("DEVCLUSTER_BACKUP", False)
if DEVCLUSTER_BACKUP and all(c.local for c in KAFKA_CLUSTERS):
    KAFKA_CLUSTERS += (ClusterConfig(name="backup", bootstrap_servers=f"127.0.0.1:{DEVCLUSTER_BACKUP_PORT}"),)
# Kafka Connect: each cluster's Connect clusters (console/connect_config.py: KAFKA_CLUSTERS_FILE's "connect"
# lists, or KAFKA_CONNECT_URL); the local cluster's is the local worker (`manage.py connectworker`).
DEVCLUSTER_CONNECT_PORT = env_int("DEVCLUSTER_CONNECT_PORT", 8083, minimum=1024)
DEVCLUSTER_CONNECT_DIR = Path(env_str("DEVCLUSTER_CONNECT_DIR", str(VAR_DIR / "connect")))
KAFKA_CONNECT = load_connect_clusters(KAFKA_CLUSTERS, f"http://127.0.0.1:{DEVCLUSTER_CONNECT_PORT}")
# Seconds one call to a Connect worker's REST API may take; the watcher reads each Connect cluster
# every CONNECT_POLL_INTERVAL seconds, so a state change reaches open pages within about that.
CONNECT_REQUEST_TIMEOUT = env_float("CONNECT_REQUEST_TIMEOUT", 5.0, minimum=0.5)
CONNECT_POLL_INTERVAL = env_float("CONNECT_POLL_INTERVAL", 1.0, minimum=0.2)
# A transaction that holds a partition's last stable offset longer than this, with records behind it,
# hangs (transactions_app): read_committed consumers of that partition are stopped meanwhile.
TRANSACTION_HANGING_SECONDS = env_float("TRANSACTION_HANGING_SECONDS", 120.0, minimum=1.0)
# The watcher lists the transactions every TRANSACTION_POLL_INTERVAL seconds (events and the alert condition).
TRANSACTION_POLL_INTERVAL = env_float("TRANSACTION_POLL_INTERVAL", 15.0, minimum=1.0)
# The watcher lists the topics with remote storage enabled every TIERED_POLL_INTERVAL seconds (the topics list's flag).
TIERED_POLL_INTERVAL = env_float("TIERED_POLL_INTERVAL", 60.0, minimum=1.0)
# Seconds one HTTP message scan may read before it answers with what it found and where to resume.
MESSAGES_SCAN_TIME_BUDGET = env_float("MESSAGES_SCAN_TIME_BUDGET", 10.0, minimum=0.5)

# The name a watcher holds its clusters' leases under; `manage.py watch` gives its children its own,
# so a child it restarts takes the leases back at once. Empty: host name and process id.
WATCHER_OWNER = env_str("WATCHER_OWNER", "")
WATCHER_METADATA_INTERVAL = env_float("WATCHER_METADATA_INTERVAL", 1.0, minimum=0.2)
# After a cycle whose metadata moved (leaders, ISR, topics: more moves are likely to follow), the next
# cycle starts this long after it began instead (runner.cycle_delay); a quiet cluster is polled as before.
WATCHER_BUSY_INTERVAL = env_float("WATCHER_BUSY_INTERVAL", 0.5, minimum=0.2)
# A cycle that outlasts the interval (a large cluster) is followed by a rest of at least this share of
# its time (runner.cycle_delay): the watcher's cycles take at most about 1/(1+share) of a core.
WATCHER_CYCLE_REST = env_float("WATCHER_CYCLE_REST", 0.1, minimum=0.0)
WATCHER_OFFSETS_INTERVAL = env_float("WATCHER_OFFSETS_INTERVAL", 3.0, minimum=0.5)
WATCHER_CONFIGS_INTERVAL = env_float("WATCHER_CONFIGS_INTERVAL", 30.0, minimum=1.0)
WATCHER_SIZES_INTERVAL = env_float("WATCHER_SIZES_INTERVAL", 15.0, minimum=1.0)
# Replica lag (console/watcher/replica_lag.py): a follower still in the ISR whose lag has grown for this
# share of the brokers' replica.lag.time.max.ms is "about to shrink" the ISR (Kafka drops it at the whole).
REPLICA_LAG_TIME_MAX_MS = env_int("REPLICA_LAG_TIME_MAX_MS", 30000, minimum=1)
REPLICA_LAG_SHRINK_SHARE = env_float("REPLICA_LAG_SHRINK_SHARE", 0.5, minimum=0.01)
# Seconds between reads of every partition's start offset (sooner when one can have moved:
# Sampler._starts_due); a log's start moves only when Kafka deletes segments or records.
WATCHER_STARTS_INTERVAL = env_float("WATCHER_STARTS_INTERVAL", 15.0, minimum=1.0)
# The sampling passes (offsets, sizes, groups and their evaluation) in a process of their own, so a
# large cluster's group evaluation never holds up the metadata cycle (console/watcher/sampling_process.py).
WATCHER_SAMPLER_PROCESS = env_bool("WATCHER_SAMPLER_PROCESS", True)
# Topics whose sampled offsets, sizes or rate one metadata cycle puts in its snapshot, besides those
# whose metadata changed; the rest of a large sampling pass's go into the next cycles (ClusterWatcher._later_topics).
WATCHER_CYCLE_SAMPLED_TOPICS = env_int("WATCHER_CYCLE_SAMPLED_TOPICS", 3000, minimum=1)
# A sampling process given work that sends no pass for this long is taken for hung and replaced.
WATCHER_SAMPLER_STALL_SECONDS = env_float("WATCHER_SAMPLER_STALL_SECONDS", 120.0, minimum=5.0)
# The sampling process runs below the watcher's priority (os.nice): when both want the CPU, a leader
# move reaching the pages goes before the next lag evaluation, which comes every few seconds anyway.
WATCHER_SAMPLER_NICENESS = min(19, env_int("WATCHER_SAMPLER_NICENESS", 10, minimum=0))
# The console's own analytics samples topic moves at every sample: on its own (an otherwise idle
# cluster) that makes a new snapshot at most this often, not at every sample.
WATCHER_OWN_TOPIC_INTERVAL = env_float("WATCHER_OWN_TOPIC_INTERVAL", 30.0, minimum=0.0)
# After a change made through the console, requests wait up to this long for the snapshot to show it.
READ_YOUR_WRITES_WAIT = env_float("READ_YOUR_WRITES_WAIT", 5.0, minimum=0.0)

# Analytics: the watcher appends its offset samples to this topic of the console's own (retention in
# hours); Spark jobs (analytics/) read it back. SPARK_MASTER: local[*] or spark://host:7077.
ANALYTICS_SAMPLES = env_bool("ANALYTICS_SAMPLES", True)
ANALYTICS_SAMPLES_TOPIC = env_str("ANALYTICS_SAMPLES_TOPIC", "__kafka_console_samples")
ANALYTICS_RETENTION_HOURS = env_float("ANALYTICS_RETENTION_HOURS", 7 * 24.0, minimum=1.0)
SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
SPARK_DRIVER_MEMORY = env_str("SPARK_DRIVER_MEMORY", "1g")
SPARK_SHUFFLE_PARTITIONS = env_int("SPARK_SHUFFLE_PARTITIONS", 4, minimum=1)
# Any other Spark settings for the analytics worker's session ("key=value;key=value"), over the above.
SPARK_CONF = env_pairs("SPARK_CONF")
# A run still going after this many seconds is cancelled and failed; a run no worker took for as long is failed.
ANALYTICS_RUN_TIMEOUT = env_float("ANALYTICS_RUN_TIMEOUT", 1800.0, minimum=10.0)
# A queued run whose message the Celery broker no longer holds (Redis restarted, the queue lost) and
# that no worker has is failed this many seconds after it was queued (analytics/queue.py).
CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS = env_float("CONSOLE_ANALYTICS_QUEUE_LOST_SECONDS", 180.0, minimum=30.0)
# Runs one user may have queued at once (scheduled reports are nobody's); "Run now" on a cluster that
# already has a queued run returns that run instead of queuing a second.
CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER = env_int("CONSOLE_ANALYTICS_MAX_QUEUED_PER_USER", 3, minimum=1)
# Scheduled lag reports by e-mail use Django's mail settings.
EMAIL_HOST = env_str("EMAIL_HOST", "127.0.0.1")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "kafka-console@localhost")

# Alert channels (alerts_app/delivery.py): a failed attempt is tried again after BACKOFF seconds, doubled
# each time up to BACKOFF_MAX; one HTTP or SMTP attempt waits at most TIMEOUT seconds; after FAILURE_EVENT_AFTER
# failures in a row a channel raises an event of its own. EXTERNAL_URL: the console's address, for links in messages.
ALERTS_DELIVERY_BACKOFF = env_float("ALERTS_DELIVERY_BACKOFF", 1.0, minimum=0.001)
ALERTS_DELIVERY_BACKOFF_MAX = env_float("ALERTS_DELIVERY_BACKOFF_MAX", 300.0, minimum=0.001)
ALERTS_DELIVERY_TIMEOUT = env_float("ALERTS_DELIVERY_TIMEOUT", 10.0, minimum=0.5)
ALERTS_CHANNEL_FAILURE_EVENT_AFTER = env_int("ALERTS_CHANNEL_FAILURE_EVENT_AFTER", 3, minimum=1)
ALERTS_EXTERNAL_URL = env_str("ALERTS_EXTERNAL_URL", "").rstrip("/")

# Reassignment jobs: the replication throttle (bytes/s per broker) and concurrent movements per broker
# a job uses unless the operator says otherwise when executing it.
REASSIGNMENT_THROTTLE = env_int("REASSIGNMENT_THROTTLE", 50 * 1024 * 1024, minimum=1024)
REASSIGNMENT_MAX_MOVES_PER_BROKER = env_int("REASSIGNMENT_MAX_MOVES_PER_BROKER", 5, minimum=1)
# Balance watch: a broker holding under this share of the mean replica count is "nearly empty";
# replica or leader counts further apart than this share of the mean are skew.
BALANCE_SKEW_THRESHOLD = env_float("BALANCE_SKEW_THRESHOLD", 0.2, minimum=0.01)
# Timeline retention (console/retention.py): events and rebalances older than this many days go, and
# each cluster keeps at most this many events (and as many rebalances): the newest.
TIMELINE_RETENTION_DAYS = env_float("TIMELINE_RETENTION_DAYS", 30.0, minimum=0.01)
TIMELINE_MAX_ROWS = env_int("TIMELINE_MAX_ROWS", 1_000_000, minimum=1000)

# Single sign-on (console/sso_settings.py): OpenID Connect and LDAP, each off unless configured; their
# backends come after the local accounts' (which stay for small teams).
from console.sso_settings import *  # noqa: E402,F403

AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, *SSO_BACKENDS]  # noqa: F405

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("CONSOLE_LOG_LEVEL", "INFO")},
    # (axes: each failed login is a warning; its INFO lines repeat every successful login)
    "loggers": {"django.channels.server": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
