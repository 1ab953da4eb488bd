"""The manual (docs/): it builds with warnings as errors, its reference holds every setting,
command and public name the code has, and the migration guide's promises about installing hold.

The site is built once per test process, in-process, as ``sphinx-build -W`` builds it. The docs
tools are in the ``dev`` dependency group (run-tests.sh installs it); the floors lane installs
the ``test`` group only, so there the build tests are skipped, and nowhere else.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import click
import pytest

import celery_dbeat
from celery_dbeat import api
from celery_dbeat.cli import dbeat
from celery_dbeat.config import SETTING_KEYS
from tests.unit.test_extras import extra

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
INSTALL_SOLAR = 'pip install "celery-dbeat[solar]"'
#: What the CLI reference calls the click group (sphinx-click's ``:prog:``, docs/reference/cli.md).
PROG = "celery -A proj dbeat"
DOCS_TOOLS = ("sphinx", "myst_parser", "sphinx_click", "furo")

# Sphinx 9 deprecates attributes that sphinx-click and MyST-Parser still read: their problem.
pytestmark = pytest.mark.filterwarnings("ignore:.*Check CHANGES for Sphinx API modifications")


def _docs_tools_or_skip() -> None:
    missing = [name for name in DOCS_TOOLS if importlib.util.find_spec(name) is None]
    if not missing:
        return
    # mypy comes with the dev group too: where it is installed the docs tools must be.
    if importlib.util.find_spec("mypy") is not None:
        pytest.fail(
            f"the dev group is installed but not {', '.join(missing)}: pip install --group dev"
        )
    pytest.skip(f"{', '.join(missing)} not installed: the docs tools are in the dev group")


class Site:
    """The built HTML, read back."""

    def __init__(self, root: Path, status: int, warnings: str) -> None:
        self.root = root
        self.status = status
        self.warnings = warnings

    def page(self, name: str) -> str:
        return (self.root / f"{name}.html").read_text()

    def ids(self, name: str) -> set[str]:
        return set(re.findall(r'\bid="([^"]+)"', self.page(name)))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    _docs_tools_or_skip()
    from sphinx.cmd.build import build_main

    out = tmp_path_factory.mktemp("docs")
    warnings = out / "warnings.txt"
    status = build_main(
        [
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            "-d",
            str(out / "doctrees"),
            "-w",
            str(warnings),
            str(DOCS),
            str(out / "html"),
        ]
    )
    return Site(out / "html", status, warnings.read_text() if warnings.exists() else "")


docs_site = pytest.mark.xdist_group("docs")  # one build per run, on one worker


@docs_site
def test_the_manual_builds_with_warnings_as_errors(site: Site) -> None:
    assert site.status == 0, site.warnings
    assert site.warnings == ""


class _TableRows(HTMLParser):
    """The text of each cell of each body row of the page's tables."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
        elif tag == "td" and self._in_body:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


@docs_site
def test_every_setting_is_in_the_settings_reference_with_its_default_and_meaning(
    site: Site,
) -> None:
    parser = _TableRows()
    parser.feed(site.page("reference/settings"))
    rows = {row[0]: row[1:] for row in parser.rows if row and row[0].startswith("dbeat_")}

    assert sorted(rows) == sorted(SETTING_KEYS)
    for key, (default, meaning) in rows.items():
        assert default, key
        assert meaning, key


def _commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    if command.hidden:
        return
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


def _section_id(path: tuple[str, ...]) -> str:
    # docutils' make_id, which sphinx-click gives each command's section, on ASCII names.
    return re.sub(r"[^a-z0-9]+", "-", " ".join((PROG, *path)).lower()).strip("-")


def _option_id(path: tuple[str, ...], option: str) -> str:
    # Sphinx's std domain: "cmdoption-" + the program and option name, punctuation as dashes.
    return "cmdoption-" + re.sub(r"[^A-Za-z0-9]+", "-", " ".join((PROG, *path, option))).strip("-")


def test_the_cli_walk_finds_every_subcommand_of_a_group() -> None:
    paths = [path for path, _ in _commands(dbeat)]

    assert ("calendar", "add") in paths
    assert ("add",) in paths
    assert () in paths


@docs_site
def test_every_command_and_option_is_in_the_cli_reference(site: Site) -> None:
    ids = site.ids("reference/cli")
    missing = []
    for path, command in _commands(dbeat):
        if _section_id(path) not in ids:
            missing.append(" ".join(path) or "(the group)")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                option = max(param.opts, key=len)
                if _option_id(path, option) not in ids:
                    missing.append(f"{' '.join(path)} {option}")

    assert missing == []


def _schedules_methods() -> list[str]:
    return [name for name, _ in inspect.getmembers(api.Schedules) if not name.startswith("_")]


@docs_site
def test_every_public_name_is_in_the_python_reference(site: Site) -> None:
    ids = site.ids("reference/python-api")
    expected = [
        *(f"celery_dbeat.{name}" for name in celery_dbeat.__all__),
        *(f"celery_dbeat.api.{name}" for name in api.__all__),
        *(f"celery_dbeat.api.Schedules.{name}" for name in _schedules_methods()),
    ]

    assert [name for name in expected if name not in ids] == []


def test_the_schedules_methods_the_reference_is_checked_for_are_its_public_api() -> None:
    methods = _schedules_methods()

    assert {"add", "update", "pause", "resume", "trigger", "backfill", "history"} <= set(methods)


def test_every_solar_mapping_of_the_migration_guide_says_to_install_the_solar_extra() -> None:
    guide = (DOCS / "tutorial" / "migrating.md").read_text()
    rows = [line for line in guide.splitlines() if line.startswith("|") and "solar event" in line]

    assert len(rows) == 2  # from beat_schedule, from django-celery-beat
    for row in rows:
        assert INSTALL_SOLAR in row, row
    assert INSTALL_SOLAR in guide.split("## The order of the steps")[1].split("##")[0]


def test_the_solar_extra_the_guide_names_brings_ephem() -> None:
    assert "ephem" in extra("solar")
