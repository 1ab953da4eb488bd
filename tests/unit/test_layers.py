"""The planner is pure: importing it loads neither SQLAlchemy nor Alembic nor Redis (import-linter
checks every import in CI; this checks what a process really loads)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["celery_dbeat.planning", "celery_dbeat.core.fires", "celery_dbeat.health"]
)
def test_importing_the_pure_core_loads_no_database_or_redis_library(module: str) -> None:
    code = (
        f"import json, sys, {module}; "
        "print(json.dumps([m for m in ('sqlalchemy', 'alembic', 'redis') if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    assert json.loads(result.stdout) == []
