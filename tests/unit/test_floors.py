"""The floors lane's constraints (tests/floors.py): every dependency declares the lowest version
it works with, and the lane pins exactly that."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.floors import floors, group_requirements, newest, project, requirements


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


def test_the_newest_step_constrains_django_to_the_newest_major_its_cap_admits() -> None:
    assert newest(requirements(project()), "Django") == "django>=6,<7"


@pytest.mark.parametrize(
    ("requirement", "constraint"),
    [
        pytest.param("x>=4.2,<7", "x>=6,<7", id="major-cap"),
        pytest.param("x>=4.2,<7.0.0", "x>=6,<7.0.0", id="major-cap-spelt-long"),
        pytest.param("x>=6,<6.1", "x>=6,<6.1", id="minor-cap"),
    ],
)
def test_the_newest_admitted_series_is_read_from_the_cap(requirement: str, constraint: str) -> None:
    assert newest([Requirement(requirement), Requirement("other<2")], "x") == constraint


def test_a_dependency_without_a_cap_has_no_newest_step() -> None:
    with pytest.raises(SystemExit, match="flask declares no upper bound"):
        newest([Requirement("Flask>=3")], "Flask")


def test_a_group_is_listed_as_written_but_the_packages_left_out(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(
        "[dependency-groups]\n"
        'test = ["pytest>=8", "Django-Celery-Beat==2.9.0",'
        " \"cronsim==2.8; python_version >= '3.11'\"]\n"
        'dev = [{ include-group = "test" }, "ruff"]\n'
    )

    assert group_requirements("dev", ["django_celery_beat"], path) == [
        "pytest>=8",
        "cronsim==2.8; python_version >= '3.11'",
        "ruff",
    ]
