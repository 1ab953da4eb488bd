"""What each ``dbeat_*`` setting means, for the settings reference (``dbeat_settings.py``).

Keyed by setting; the keys themselves and their defaults are read from celery_dbeat/config.py.
A setting added there without a line here fails the docs build. Markdown; a link to another page
is relative to docs/reference/.
"""

from __future__ import annotations

#: Defaults the code computes at run time, or that need a word; every other default is read from
#: the ``Settings`` field.
DEFAULTS = {
    "dbeat_database_url": "a SQLite file per app in `~/.local/share/celery-dbeat/`",
    "dbeat_misfire_grace": "`None` (unbounded)",
    "dbeat_instance_name": "`hostname:pid`",
}

MEANINGS = {
    "dbeat_database_url": (
        "SQLAlchemy URL of the schedule database: `postgresql+psycopg://`, `mysql+pymysql://` or "
        "`sqlite:////absolute/path` (see [Configuration](../how-to/configuration.md))"
    ),
    "dbeat_engine_options": (
        "extra `create_engine()` arguments (pool size, SSL `connect_args`, ...)"
    ),
    "dbeat_redis_url": "Redis for per-fire locks; `None` claims fires through the database alone",
    "dbeat_redis_key_prefix": "prefix of the lock keys",
    "dbeat_redis_options": (
        "extra redis-py client arguments (TLS files, Sentinel's `master_name`, ...); see "
        "[Redis deployments](../how-to/configuration.md#redis-deployments)"
    ),
    "dbeat_misfire_policy": "default misfire policy: `skip`, `latest`, `earliest`, `all`",
    "dbeat_misfire_grace": "default grace window for missed fires",
    "dbeat_misfire_tolerance": (
        "after every beat was down, a slot at most this late is merely late and fires normally "
        "(see [Misfires](../how-to/misfires.md))"
    ),
    "dbeat_catchup_limit": "most fires the `all` policy sends for one outage (newest kept)",
    "dbeat_catchup_rate": (
        "most queued fires (catch-up of policy `all`) one beat publishes a second; `None`: all "
        "the capacity on-time fires leave"
    ),
    "dbeat_lock_ttl": (
        "life of a per-fire lock, and of the lease a beat has to publish a fire it recorded; a "
        "beat not seen for this long is taken for dead"
    ),
    "dbeat_max_interval": (
        "longest sleep between ticks: edits made elsewhere are seen within this "
        "(`celery beat --max-interval` overrides it)"
    ),
    "dbeat_batch_size": (
        "most fires recorded (and due schedules claimed) per database transaction"
    ),
    "dbeat_publish_retry_window": (
        "how long a fire the broker refused is retried before it is marked `failed`"
    ),
    "dbeat_auto_migrate": (
        "create or upgrade the tables at start-up (safe with many beats starting at once)"
    ),
    "dbeat_sync_beat_schedule": "copy `beat_schedule` into the database at start-up",
    "dbeat_max_run_time": (
        "how long a run may take before it counts as lost, for schedules with an overlap policy "
        "and no `max_run_time` of their own"
    ),
    "dbeat_history_retention": (
        "fire history older than this is pruned by beat in bounded batches; `0` keeps it "
        "forever. A schedule keeps the slot up to which its records were pruned (`pruned_until`: "
        "a backfill does not send such slots again) and its count of failed runs in a row "
        "(`pause_after_failures` counts across the retention)"
    ),
    "dbeat_audit_retention": (
        "audit entries older than this are pruned by beat in bounded batches; `0` keeps them "
        "forever"
    ),
    "dbeat_metrics_port": "serve Prometheus metrics on this port (extra `metrics`)",
    "dbeat_metrics_address": (
        'address the metrics server listens on (`"0.0.0.0"` for every interface)'
    ),
    "dbeat_instance_name": "this beat's name in the fire history and logs",
    "dbeat_clock_offset": "added to this beat's clock; only for simulating skewed hosts in tests",
    "dbeat_admin_user": (
        "the user who may sign in to `celery dbeat admin` (HTTP basic auth); with "
        "`dbeat_admin_password_hash`, or the environment's `DBEAT_ADMIN_USER`, which wins. Without "
        "a login the admin serves on a loopback address only (see "
        "[The admin without a web app](../how-to/standalone-admin.md))"
    ),
    "dbeat_admin_password_hash": (
        "a werkzeug hash of that user's password (`celery -A proj dbeat admin --hash-password` "
        "makes one), or the environment's `DBEAT_ADMIN_PASSWORD_HASH`, which wins; never the "
        "password itself"
    ),
    "dbeat_admin_secret_key": (
        "signs `celery dbeat admin`'s session cookie and so its forms' CSRF tokens (or "
        "`DBEAT_ADMIN_SECRET_KEY`); `None`: a random key per process, so a restart asks open "
        "forms to be loaded again"
    ),
    "dbeat_alert_task": (
        "the Celery task alerts are sent to, for schedules without an `alert_task` of their own "
        "(see [Alerts](../how-to/alerts.md))"
    ),
    "dbeat_alert_webhook": (
        "an http(s) URL alerts are POSTed to as JSON, for schedules without an `alert_webhook` "
        "of their own"
    ),
    "dbeat_alert_webhook_timeout": "how long a webhook may take to answer one alert",
    "dbeat_alert_retries": (
        "how many times a failed alert delivery is retried (10 s, then twice as long each "
        "time, up to 10 min) before it is given up and logged as an ERROR"
    ),
}
