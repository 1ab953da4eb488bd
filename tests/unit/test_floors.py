"""The floors lane's constraints (tests/floors.py): every dependency declares the lowest version
it works with, and the lane pins exactly that."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.floors import floors, project, requirements


def test_every_dependency_and_extra_declares_a_floor_the_lane_pins() -> None:
    table = project()
    found = requirements(table)
    pinned = floors(found)
    assert {"celery", "kombu", "sqlalchemy", "alembic", "croniter", "click"} <= set(pinned)
    assert {"redis", "psycopg", "pymysql", "django", "flask", "flask-admin"} <= set(pinned)
    assert pinned["croniter"] == Version("6.2")


def test_a_package_named_twice_is_pinned_at_the_higher_floor() -> None:
    found = [Requirement("celery>=5.3"), Requirement("celery[redis]>=5.4"), Requirement("x~=1.2")]
    assert floors(found) == {"celery": Version("5.4"), "x": Version("1.2")}


def test_a_dependency_without_a_floor_is_refused_naming_it() -> None:
    with pytest.raises(SystemExit, match=r"croniter<8 declares no lower bound"):
        floors([Requirement("croniter<8")])


def test_a_dependency_for_another_platform_is_left_out() -> None:
    table = {"dependencies": ["tzdata; sys_platform == 'no-such-platform'", "click>=8.1.3"]}
    assert [r.name for r in requirements(table)] == ["click"]
