"""The core is pure: importing any of its modules loads neither SQLAlchemy nor Alembic nor Redis
nor Celery (import-linter checks every import in CI; this checks what a process really loads)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import celery_dbeat.core

CORE_MODULES = sorted(
    info.name for info in pkgutil.walk_packages(celery_dbeat.core.__path__, "celery_dbeat.core.")
)


def test_the_core_has_the_modules_the_layout_names() -> None:
    assert {"celery_dbeat.core.planning", "celery_dbeat.core.timing.cron"} <= set(CORE_MODULES)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_importing_the_pure_core_loads_no_database_redis_or_celery_library(module: str) -> None:
    code = (
        f"import json, sys, {module}; "
        "print(json.dumps([m for m in ('sqlalchemy', 'alembic', 'redis', 'celery') "
        "if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert json.loads(result.stdout) == []
