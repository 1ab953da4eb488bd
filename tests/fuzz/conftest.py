"""Fuzz fixtures: Hypothesis profiles, a migrated SQLite database per test, and no ``.hypothesis``
directory in the repository. (A migrated PostgreSQL one is tests/conftest.py's ``postgres_store``.)

Profiles (``DBEAT_FUZZ_PROFILE``, default ``dbeat-fuzz``, or ``dbeat-fuzz-ci`` when ``CI`` is
set; ``dbeat-fuzz-deep`` for a longer hunt): no example database, no deadline (the examples do
real I/O), seeds printed on failure.
They are applied per test through :func:`fuzz_settings`, never loaded globally, so the rest of the
suite keeps its own Hypothesis settings. Hypothesis' storage directory is moved to the system's
temporary directory for the session (see below).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.configuration import set_hypothesis_home_dir

from celery_dbeat.store import Store
from tests.services import install_schema

_COMMON: dict[str, Any] = {
    "database": None,
    "deadline": None,
    "derandomize": False,
    "print_blob": True,
    # The explain phase traces every line (Python < 3.12), which makes a failing example that
    # walks thousands of cron slots take minutes; the failure itself is reported without it.
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
}
settings.register_profile("dbeat-fuzz", max_examples=100, **_COMMON)
settings.register_profile("dbeat-fuzz-ci", max_examples=100, **_COMMON)
#: For a hunt by hand: DBEAT_FUZZ_PROFILE=dbeat-fuzz-deep pytest tests/fuzz (minutes).
settings.register_profile("dbeat-fuzz-deep", max_examples=2000, **_COMMON)
# Hypothesis' pytest plugin caches the constants of local modules under ``.hypothesis/`` of the
# working directory while collecting, even without an example database: point it elsewhere
# (before collection ends, hence here) unless the user chose a place.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "celery-dbeat-hypothesis")

PROFILE = os.environ.get(
    "DBEAT_FUZZ_PROFILE", "dbeat-fuzz-ci" if os.environ.get("CI") else "dbeat-fuzz"
)


def fuzz_settings(scale: float = 1.0, **overrides: Any) -> settings:
    """The active fuzz profile, with ``max_examples`` scaled by ``scale``."""
    profile = settings.get_profile(PROFILE)
    examples = max(1, round(profile.max_examples * scale))
    return settings(profile, **{"max_examples": examples, **overrides})


@pytest.fixture
def migrated_sqlite_url(sqlite_url: str) -> str:
    """``sqlite_url`` (tests/conftest.py), migrated: a copy of a database migrated once
    (:func:`tests.services.install_schema`), since examples come by the hundred (each clears it
    before it runs)."""
    install_schema(sqlite_url)
    return sqlite_url


@pytest.fixture
def sqlite_store(migrated_sqlite_url: str) -> Iterator[Store]:
    """A store on ``migrated_sqlite_url``; the PostgreSQL runs take ``postgres_store``
    (tests/conftest.py)."""
    store = Store(migrated_sqlite_url)
    yield store
    store.close()
