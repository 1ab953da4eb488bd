"""What each extra installs is enough for what it is named after (pyproject.toml)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def extra(name: str) -> dict[str, Requirement]:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    return {Requirement(r).name.lower(): Requirement(r) for r in extras[name]}


def test_the_redis_extra_brings_celerys_redis_transport_for_a_redis_broker() -> None:
    # redis-py alone serves the locks, but a redis:// broker needs kombu's transport and what it
    # imports (packaging, in kombu 5.5+), which Celery's own extra pins.
    requirements = extra("redis")

    assert "redis" in requirements["celery"].extras
    assert "redis" in requirements
