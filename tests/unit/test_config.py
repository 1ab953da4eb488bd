"""Settings: every ``dbeat_*`` key validated once, errors naming the key and the value."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import celery
import pytest

from celery_dbeat.config import (
    Settings,
    SettingsErrors,
    default_database_url,
    mask_url,
    with_environment,
)
from celery_dbeat.core.errors import ConfigurationError
from celery_dbeat.core.misfire import MisfirePolicy, MisfireRules


def app_with(config: object, namespace: str | None = None) -> celery.Celery:
    app = celery.Celery("dbeat-config-test", set_as_current=False)
    app.config_from_object(config, namespace=namespace)
    return app


def test_settings_have_the_documented_defaults() -> None:
    settings = Settings.from_mapping({})
    assert settings.database_url == default_database_url()
    assert settings.engine_options == {}
    assert settings.redis_url is None
    assert settings.redis_key_prefix == "dbeat:"
    assert settings.misfire_policy is MisfirePolicy.LATEST
    assert settings.misfire_grace is None
    assert settings.misfire_tolerance == timedelta(seconds=5)
    assert settings.catchup_limit == 100
    assert settings.lock_ttl == timedelta(seconds=30)
    assert settings.max_interval == timedelta(seconds=5)
    assert settings.batch_size == 500
    assert settings.publish_retry_window == timedelta(hours=1)
    assert settings.auto_migrate is True
    assert settings.sync_beat_schedule is True
    assert settings.instance_name
    assert settings.clock_offset == timedelta(0)
    assert settings.misfire_rules == MisfireRules()
    assert settings.max_run_time == timedelta(hours=1)
    assert settings.history_retention == timedelta(days=30)
    assert settings.metrics_port is None
    assert settings.metrics_address == "127.0.0.1"  # this host only
    assert settings.redis_options == {}
    assert (settings.admin_user, settings.admin_password_hash, settings.admin_secret_key) == (
        None,
        None,
        None,
    )  # no login: `dbeat admin` serves on loopback only


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        pytest.param("database_url", "postgresql://h/db", "postgresql://h/db", id="database-url"),
        pytest.param("engine_options", {"pool_size": 5}, {"pool_size": 5}, id="engine-options"),
        pytest.param("redis_url", "redis://h:6379/0", "redis://h:6379/0", id="redis-url"),
        pytest.param("redis_url", None, None, id="redis-url-none"),
        pytest.param("redis_key_prefix", "x:", "x:", id="redis-key-prefix"),
        pytest.param("misfire_policy", "all", MisfirePolicy.ALL, id="policy-string"),
        pytest.param("misfire_policy", MisfirePolicy.SKIP, MisfirePolicy.SKIP, id="policy-enum"),
        pytest.param("misfire_grace", "90m", timedelta(minutes=90), id="grace-90m"),
        pytest.param("misfire_grace", 30, timedelta(seconds=30), id="grace-seconds"),
        pytest.param("misfire_grace", None, None, id="grace-unbounded"),
        pytest.param("misfire_tolerance", 0, timedelta(0), id="tolerance-zero"),
        pytest.param("misfire_tolerance", "1m30s", timedelta(seconds=90), id="tolerance-1m30s"),
        pytest.param("catchup_limit", 0, 0, id="catchup-limit-zero"),
        pytest.param("catchup_limit", 10_000, 10_000, id="catchup-limit-at-cap"),
        pytest.param("lock_ttl", "5m", timedelta(minutes=5), id="lock-ttl-5m"),
        pytest.param("lock_ttl", timedelta(seconds=30), timedelta(seconds=30), id="lock-ttl-td"),
        pytest.param("max_interval", "2.5", timedelta(seconds=2.5), id="max-interval-string"),
        pytest.param("batch_size", 1, 1, id="batch-size-one"),
        pytest.param("publish_retry_window", "1d", timedelta(days=1), id="retry-window-1d"),
        pytest.param("auto_migrate", False, False, id="auto-migrate-false"),
        pytest.param("auto_migrate", "off", False, id="auto-migrate-off"),
        pytest.param("sync_beat_schedule", "Yes", True, id="sync-yes"),
        pytest.param("instance_name", "beat-a", "beat-a", id="instance-name"),
        pytest.param("clock_offset", -5, timedelta(seconds=-5), id="clock-offset-negative"),
        pytest.param("clock_offset", "250ms", timedelta(milliseconds=250), id="clock-offset-ms"),
        pytest.param(
            "clock_offset",
            "-5s",
            timedelta(seconds=-5),
            id="clock-offset-negative-with-unit",
        ),
        pytest.param("max_run_time", "6h", timedelta(hours=6), id="max-run-time-6h"),
        pytest.param("history_retention", "90d", timedelta(days=90), id="retention-90d"),
        pytest.param("history_retention", 0, None, id="retention-zero-keeps-forever"),
        pytest.param("metrics_port", 9808, 9808, id="metrics-port"),
        pytest.param("metrics_port", "9808", 9808, id="metrics-port-string"),
        pytest.param("metrics_address", "127.0.0.1", "127.0.0.1", id="metrics-address"),
        pytest.param(
            "redis_options",
            {"ssl_cert_reqs": "required"},
            {"ssl_cert_reqs": "required"},
            id="redis-options",
        ),
    ],
)
def test_each_setting_accepts_its_documented_forms(key: str, value: Any, expected: Any) -> None:
    assert getattr(Settings.from_mapping({key: value}), key) == expected


@pytest.mark.parametrize(
    ("values", "key", "fragment"),
    [
        pytest.param({"database_url": ""}, "dbeat_database_url", "non-empty", id="empty-url"),
        pytest.param({"database_url": None}, "dbeat_database_url", "non-empty", id="none-url"),
        pytest.param({"engine_options": []}, "dbeat_engine_options", "dict", id="engine-list"),
        pytest.param({"redis_url": "localhost"}, "dbeat_redis_url", "URL", id="redis-not-a-url"),
        pytest.param({"redis_key_prefix": ""}, "dbeat_redis_key_prefix", "non-empty", id="prefix"),
        pytest.param({"misfire_policy": "never"}, "dbeat_misfire_policy", "one of", id="policy"),
        pytest.param({"misfire_policy": "ALL"}, "dbeat_misfire_policy", "one of", id="policy-case"),
        pytest.param({"misfire_grace": 0}, "dbeat_misfire_grace", "positive", id="grace-zero"),
        pytest.param({"misfire_grace": -1}, "dbeat_misfire_grace", "positive", id="grace-negative"),
        pytest.param({"misfire_grace": "soon"}, "dbeat_misfire_grace", "30s", id="grace-word"),
        pytest.param(
            {"misfire_tolerance": -1},
            "dbeat_misfire_tolerance",
            "positive",
            id="tolerance-negative",
        ),
        pytest.param({"lock_ttl": -60}, "dbeat_lock_ttl", "positive", id="lock-ttl-negative"),
        pytest.param(
            {"lock_ttl": "-5m"}, "dbeat_lock_ttl", "positive", id="lock-ttl-negative-unit"
        ),
        pytest.param({"lock_ttl": "5 minutes"}, "dbeat_lock_ttl", "30s", id="lock-ttl-words"),
        pytest.param({"lock_ttl": True}, "dbeat_lock_ttl", "boolean", id="lock-ttl-boolean"),
        pytest.param({"max_interval": 0}, "dbeat_max_interval", "positive", id="interval-zero"),
        pytest.param({"max_run_time": 0}, "dbeat_max_run_time", "positive", id="run-time-zero"),
        pytest.param(
            {"history_retention": -1},
            "dbeat_history_retention",
            "positive",
            id="retention-negative",
        ),
        pytest.param({"metrics_port": 70000}, "dbeat_metrics_port", "port", id="port-too-big"),
        pytest.param({"metrics_port": True}, "dbeat_metrics_port", "port", id="port-boolean"),
        pytest.param(
            {"metrics_address": ""}, "dbeat_metrics_address", "non-empty", id="address-empty"
        ),
        pytest.param({"redis_options": "ssl"}, "dbeat_redis_options", "dict", id="redis-options"),
        pytest.param(
            {"publish_retry_window": "0s"},
            "dbeat_publish_retry_window",
            "positive",
            id="retry-window-zero",
        ),
        pytest.param(
            {"catchup_limit": -1}, "dbeat_catchup_limit", "from 0", id="catchup-limit-negative"
        ),
        pytest.param(
            {"catchup_limit": 10_001}, "dbeat_catchup_limit", "to 10000", id="catchup-over-cap"
        ),
        pytest.param({"catchup_limit": "5"}, "dbeat_catchup_limit", "whole", id="catchup-string"),
        pytest.param({"catchup_limit": 2.5}, "dbeat_catchup_limit", "whole", id="catchup-float"),
        pytest.param({"catchup_limit": True}, "dbeat_catchup_limit", "whole", id="catchup-bool"),
        pytest.param({"batch_size": 0}, "dbeat_batch_size", ">= 1", id="batch-size-zero"),
        pytest.param({"auto_migrate": "maybe"}, "dbeat_auto_migrate", "true or false", id="bool"),
        pytest.param({"auto_migrate": 1}, "dbeat_auto_migrate", "true or false", id="bool-int"),
        pytest.param({"instance_name": 5}, "dbeat_instance_name", "non-empty", id="name-int"),
        pytest.param({"clock_offset": "soon"}, "dbeat_clock_offset", "30s", id="offset-word"),
        pytest.param(
            {"lock_ttl": 5}, "dbeat_lock_ttl", "longer than dbeat_max_interval", id="ttl-equal"
        ),
        pytest.param(
            {"lock_ttl": 4}, "dbeat_lock_ttl", "longer than dbeat_max_interval", id="ttl-shorter"
        ),
        pytest.param(
            {"lock_ttl": "30s", "max_interval": "1m"},
            "dbeat_lock_ttl",
            "longer than dbeat_max_interval",
            id="ttl-shorter-than-a-raised-max-interval",
        ),
        pytest.param(
            {"lock_ttl": "inf"},
            "dbeat_lock_ttl",
            "",
            id="lock-ttl-infinite-string",
        ),
        pytest.param(
            {"max_interval": 1e20},
            "dbeat_max_interval",
            "",
            id="max-interval-too-large",
        ),
    ],
)
def test_bad_settings_are_rejected_naming_the_key_and_value(
    values: dict[str, Any], key: str, fragment: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_mapping(values)
    assert caught.value.key == key
    assert str(caught.value).startswith(f"{key}=")
    assert fragment in str(caught.value)


def test_a_valid_lock_ttl_is_longer_than_max_interval() -> None:
    settings = Settings.from_mapping({"lock_ttl": "10s", "max_interval": "9.999s"})
    assert settings.lock_ttl > settings.max_interval


def test_settings_are_frozen() -> None:
    settings = Settings.from_mapping({})
    with pytest.raises(AttributeError):
        settings.lock_ttl = timedelta(0)  # type: ignore[misc]


def test_misfire_rules_carry_the_configured_defaults() -> None:
    settings = Settings.from_mapping(
        {
            "misfire_policy": "all",
            "misfire_grace": "90m",
            "misfire_tolerance": 5,
            "catchup_limit": 7,
        }
    )
    assert settings.misfire_rules == MisfireRules(
        MisfirePolicy.ALL, timedelta(seconds=5), timedelta(minutes=90), 7
    )


# From a Celery app ----------------------------------------------------------------------------


class _PlainConfig:
    dbeat_database_url = "postgresql://beat:secret@db/schedules"
    dbeat_misfire_policy = "earliest"
    dbeat_lock_ttl = "2m"


class _NamespacedConfig:
    CELERY_BROKER_URL = "memory://"
    CELERY_DBEAT_DATABASE_URL = "postgresql://beat:secret@db/schedules"
    CELERY_DBEAT_MISFIRE_POLICY = "earliest"
    CELERY_DBEAT_LOCK_TTL = "2m"
    DBEAT_REDIS_URL = "redis://wrong-namespace:6379/0"


@pytest.mark.parametrize(
    ("config", "namespace"),
    [
        pytest.param(_PlainConfig, None, id="lower-case-dbeat-keys"),
        pytest.param(_NamespacedConfig, "CELERY", id="django-style-celery-namespace"),
    ],
)
def test_settings_are_read_from_a_celery_app(config: object, namespace: str | None) -> None:
    settings = Settings.from_app(app_with(config, namespace))
    assert settings.database_url == "postgresql://beat:secret@db/schedules"
    assert settings.misfire_policy is MisfirePolicy.EARLIEST
    assert settings.lock_ttl == timedelta(minutes=2)
    assert settings.redis_url is None


def test_settings_set_with_conf_update_are_read() -> None:
    app = celery.Celery("dbeat-config-test", set_as_current=False)
    app.conf.update(dbeat_batch_size=50, dbeat_auto_migrate=False)
    settings = Settings.from_app(app)
    assert (settings.batch_size, settings.auto_migrate) == (50, False)


class _BadNamespacedConfig:
    CELERY_DBEAT_LOCK_TTL = "soon"


def test_a_bad_namespaced_setting_is_rejected() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_app(app_with(_BadNamespacedConfig, "CELERY"))
    assert "lock_ttl" in caught.value.key.lower()
    assert "'soon'" in str(caught.value)


class _MisspeltConfig:
    dbeat_lock_tll = 120


def test_an_unknown_dbeat_key_on_the_app_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="dbeat_lock_tll"):
        Settings.from_app(app_with(_MisspeltConfig))


def test_a_misspelt_key_never_shows_its_value_and_a_bad_url_hides_its_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_mapping({"redis_ulr": "redis://:secret@h:6379/0"})
    assert str(caught.value) == "dbeat_redis_ulr: unknown setting (did you mean dbeat_redis_url?)"
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_mapping({"lock_tll": 60})
    assert (caught.value.key, str(caught.value)) == (
        "dbeat_lock_tll",
        "dbeat_lock_tll: unknown setting (did you mean dbeat_lock_ttl?)",
    )
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_mapping({"redis_url": "redis://:se/cret@h:6379/0", "lock_ttl": "soon"})
    assert "secret" not in str(caught.value)
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_mapping({"database_url": "postgresql://u:secret@h/db", "batch_size": 0})
    assert "secret" not in str(caught.value)


# mask_url ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        pytest.param(
            "postgresql://beat:secret@db:5432/s", "postgresql://beat:***@db:5432/s", id="postgres"
        ),
        pytest.param(
            "mysql+pymysql://u:p%40ss@host/db", "mysql+pymysql://u:***@host/db", id="encoded"
        ),
        pytest.param("postgresql://u:pa@ss@h/db", "postgresql://u:***@h/db", id="raw-at-in-pw"),
        pytest.param("redis://:secret@h:6379/0", "redis://:***@h:6379/0", id="redis-no-user"),
        pytest.param("redis://u:pw@[::1]:6379", "redis://u:***@[::1]:6379", id="ipv6"),
        pytest.param(
            "postgresql://u:se/cr#et@h/db", "postgresql://u:***@h/db", id="slash-and-hash-in-pw"
        ),
        pytest.param(
            "redis://:x@h/0?password=secret&ssl=1",
            "redis://:***@h/0?password=***&ssl=1",
            id="query",
        ),
        pytest.param("postgresql://u:secret/db", "postgresql://u:***/db", id="host-left-out"),
        pytest.param("redis://:secret?ssl=1", "redis://:***?ssl=1", id="host-left-out-query"),
        pytest.param("redis://localhost:6379/0", "redis://localhost:6379/0", id="port"),
        pytest.param("redis://[::1]:6379", "redis://[::1]:6379", id="ipv6-port"),
        pytest.param("redis://h:/0", "redis://h:/0", id="empty-port"),
        pytest.param(
            "postgresql://h1:5432,h2:5433/db", "postgresql://h1:5432,h2:5433/db", id="hosts"
        ),
        pytest.param("postgresql://beat@db/s", "postgresql://beat@db/s", id="no-password"),
        pytest.param("sqlite:///beat.sqlite3", "sqlite:///beat.sqlite3", id="sqlite"),
        pytest.param("", "", id="empty"),
        pytest.param(None, "None", id="none"),
    ],
)
def test_mask_url_hides_passwords(url: str | None, masked: str) -> None:
    assert mask_url(url) == masked
    if url and "secret" in url:
        assert "secret" not in mask_url(url)


def test_a_history_retention_shorter_than_runs_or_publish_retries_is_warned_about() -> None:
    url = "postgresql+psycopg://db/schedules"
    assert Settings.from_mapping({"database_url": url}).warnings() == []
    found = Settings.from_mapping({"database_url": url, "history_retention": "30m"}).warnings()
    assert len(found) == 2
    assert "dbeat_max_run_time" in found[0]
    assert "dbeat_publish_retry_window" in found[1]


# Where the schedules live without dbeat_database_url -------------------------------------------


def test_without_a_database_url_the_schedules_live_in_the_users_data_directory_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    app = celery.Celery("proj", set_as_current=False)

    settings = Settings.from_app(app)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")

    assert settings.database_url == f"sqlite:///{tmp_path}/data/celery-dbeat/proj.sqlite3"
    assert Settings.from_app(app).database_url == settings.database_url


def test_each_celery_app_gets_a_default_file_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    urls = {
        Settings.from_app(celery.Celery(name, set_as_current=False)).database_url
        for name in ("billing", "reports", "proj/../x y")
    }
    assert urls == {
        f"sqlite:///{tmp_path}/celery-dbeat/billing.sqlite3",
        f"sqlite:///{tmp_path}/celery-dbeat/reports.sqlite3",
        f"sqlite:///{tmp_path}/celery-dbeat/proj_.._x_y.sqlite3",
    }


def test_a_relative_xdg_data_home_is_ignored_as_the_xdg_spec_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_database_url("proj") == (
        f"sqlite:///{tmp_path}/.local/share/celery-dbeat/proj.sqlite3"
    )


def test_the_default_database_is_warned_about_with_its_absolute_path_and_what_it_means(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))

    (warning,) = Settings.from_app(celery.Celery("proj", set_as_current=False)).warnings()

    assert warning.startswith(
        f"dbeat_database_url is not set: the schedules are in the SQLite file "
        f"{tmp_path}/celery-dbeat/proj.sqlite3, which only this user's beats on this host share;"
    )
    assert "send every fire again; set dbeat_database_url" in warning


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        pytest.param(
            "sqlite:///schedules.db",
            "names a SQLite file relative to the working directory ({cwd}/schedules.db here): "
            "a beat started in another directory would use a file of its own and send every "
            "fire again; give an absolute path (sqlite:///{cwd}/schedules.db)",
            id="relative-file",
        ),
        pytest.param("sqlite://", "is an in-memory SQLite database", id="in-memory"),
        pytest.param("sqlite:///:memory:", "is an in-memory SQLite database", id="memory-name"),
    ],
)
def test_a_sqlite_file_other_beats_would_not_find_is_warned_about(
    url: str, fragment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    (warning,) = Settings.from_mapping({"database_url": url}).warnings()

    assert fragment.format(cwd=tmp_path) in warning


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("sqlite:////srv/beat/schedules.db", id="absolute-sqlite"),
        pytest.param("postgresql+psycopg://beat@db/proj", id="server"),
    ],
)
def test_a_database_every_beat_finds_is_not_warned_about(url: str) -> None:
    assert Settings.from_mapping({"database_url": url}).warnings() == []


# Every problem at once ---------------------------------------------------------------------------


class _TwoTyposAndABadValue:
    dbeat_database_url = "sqlite:////srv/beat.db"
    dbeat_max_intervall = 5
    dbeat_lokc_ttl = 60
    dbeat_batch_size = 0
    dbeat_frobnicate = 1


def test_every_misspelt_key_and_bad_value_is_reported_at_once_with_the_key_it_meant() -> None:
    with pytest.raises(SettingsErrors) as caught:
        Settings.from_app(app_with(_TwoTyposAndABadValue))

    assert sorted(str(error) for error in caught.value.errors) == [
        "dbeat_batch_size=0: must be a whole number >= 1",
        "dbeat_frobnicate: unknown setting (misspelt?)",
        "dbeat_lokc_ttl: unknown setting (did you mean dbeat_lock_ttl?)",
        "dbeat_max_intervall: unknown setting (did you mean dbeat_max_interval?)",
    ]
    assert str(caught.value) == "; ".join(str(error) for error in caught.value.errors)
    assert isinstance(caught.value, ConfigurationError)  # what every surface already catches


class _NamespacedTypos:
    CELERY_DBEAT_DATABASE_URL = "sqlite:////srv/beat.db"
    CELERY_DBEAT_MAX_INTERVALL = 5
    CELERY_DBEAT_REDIS_URI = "redis://:secret@h:6379/0"


def test_a_namespaced_misspelling_is_named_as_written_with_the_key_it_meant() -> None:
    with pytest.raises(SettingsErrors) as caught:
        Settings.from_app(app_with(_NamespacedTypos, "CELERY"))

    assert sorted(str(error) for error in caught.value.errors) == [
        "CELERY_DBEAT_MAX_INTERVALL: unknown setting (did you mean CELERY_DBEAT_MAX_INTERVAL?)",
        "CELERY_DBEAT_REDIS_URI: unknown setting (did you mean CELERY_DBEAT_REDIS_URL?)",
    ]
    assert "secret" not in str(caught.value)


def test_several_bad_values_are_reported_at_once() -> None:
    with pytest.raises(SettingsErrors) as caught:
        Settings.from_mapping({"lock_ttl": "soon", "misfire_policy": "never", "batch_size": 1})

    assert [error.key for error in caught.value.errors] == [
        "dbeat_lock_ttl",
        "dbeat_misfire_policy",
    ]


def test_without_a_home_directory_the_missing_database_url_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))

    with pytest.raises(ConfigurationError) as caught:
        Settings.from_app(celery.Celery("proj", set_as_current=False))

    assert str(caught.value) == (
        "dbeat_database_url=None: is not set, and this user has no home directory for the "
        "default SQLite file; set dbeat_database_url (or HOME, or XDG_DATA_HOME)"
    )


# celery dbeat admin's login and secret -------------------------------------------------------

SCRYPT = "scrypt:32768:8:1$OAbUxoPZ$" + "0a" * 64
PBKDF2 = "pbkdf2:sha256:1000000$S4gL1zMR$" + "1f" * 32


@pytest.mark.parametrize("password_hash", [SCRYPT, PBKDF2])
def test_the_admins_login_takes_a_werkzeug_hash(password_hash: str) -> None:
    settings = Settings.from_mapping({"admin_user": "ops", "admin_password_hash": password_hash})
    assert (settings.admin_user, settings.admin_password_hash) == ("ops", password_hash)
    assert password_hash not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value", "told"),
    [
        pytest.param(
            "admin_password_hash",
            "hunter2",
            "dbeat_admin_password_hash: is not a werkzeug password hash",
            id="a-password-for-a-hash",
        ),
        pytest.param(
            "admin_password_hash",
            "md5$salt$abc",
            "dbeat_admin_password_hash: is not a werkzeug password hash",
            id="another-method",
        ),
        pytest.param(
            "admin_secret_key", "", "dbeat_admin_secret_key: must be a non-empty string", id="key"
        ),
        pytest.param(
            "admin_user", "a:b", "dbeat_admin_user='a:b': must not hold ':'", id="user-colon"
        ),
        pytest.param("admin_user", 7, "dbeat_admin_user=7: must be a non-empty string", id="int"),
    ],
)
def test_a_bad_admin_setting_is_named_and_a_secret_never_shown(
    name: str, value: object, told: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_mapping({name: value})
    assert str(caught.value).startswith(told)
    if name != "admin_user" and value:
        assert str(value) not in str(caught.value)


def test_the_environment_gives_the_admins_login_and_wins() -> None:
    settings = Settings.from_mapping({"admin_user": "conf-ops"})
    environ = {
        "DBEAT_ADMIN_USER": "env-ops",
        "DBEAT_ADMIN_PASSWORD_HASH": SCRYPT,
        "DBEAT_ADMIN_SECRET_KEY": "",  # empty: unset
    }
    read = with_environment(settings, environ)
    assert (read.admin_user, read.admin_password_hash, read.admin_secret_key) == (
        "env-ops",
        SCRYPT,
        None,
    )
    assert with_environment(settings, {}) == settings


def test_a_bad_environment_value_names_the_variable_not_the_value() -> None:
    with pytest.raises(ConfigurationError) as caught:
        with_environment(Settings.from_mapping({}), {"DBEAT_ADMIN_PASSWORD_HASH": "hunter2"})
    assert str(caught.value).startswith("DBEAT_ADMIN_PASSWORD_HASH: is not a werkzeug")
    assert "hunter2" not in str(caught.value)
