"""The floors lane's constraints: every dependency at the lowest version pyproject.toml declares.

``.ci/floors`` installs the project with every extra under these constraints and runs the
in-process tests, so that a floor we declare is a floor we have tested (a user's lock file may
pick it). The floors are read from ``[project] dependencies`` and ``optional-dependencies``, never
copied by hand; a dependency that applies here and declares no lower bound is refused, since the
lane could not test it.

    python -m tests.floors constraints   # name==floor, one a line, for pip -c
    python -m tests.floors extras        # every extra, comma-separated, for .[...]
    python -m tests.floors check         # the installed versions are the floors, or exit 1
    python -m tests.floors oracles       # the test tools pinned for newer Pythons, for pip
    python -m tests.floors newest NAME   # NAME's newest admitted major, for pip
    python -m tests.floors group NAME [--without PKG ...]   # a dependency group, for pip

The test tools pinned exactly (cronsim, the cron tests' oracle) are the same on every lane:
``oracles`` prints those of the ``test`` group that a marker keeps from this Python (cronsim 2.8
declares Python >=3.11 and runs on 3.10), which ``.ci/floors`` installs over the group's
stand-in with ``--ignore-requires-python``.

The lane's second step, ``.ci/newest-django``, tests the other end of a capped range: ``newest
django`` prints the constraint to the newest major the cap admits (``Django>=4.2,<7``:
``django>=6,<7``), so that pip installs its newest release; ``group test --without ...`` the
test tools but those that would hold it back.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
#: Operators whose version is a lower bound (``~=`` and ``==`` include it).
_LOWER = (">=", "~=", "==")


def project(path: Path = PYPROJECT) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(path.read_text())["project"]
    return project


def requirements(table: dict[str, Any]) -> list[Requirement]:
    """The package's own requirements and every extra's that apply on this platform."""
    found = [Requirement(text) for text in table.get("dependencies", [])]
    for extra in table.get("optional-dependencies", {}).values():
        found += [Requirement(text) for text in extra]
    return [r for r in found if r.marker is None or r.marker.evaluate({"extra": ""})]


def floors(found: Iterable[Requirement]) -> dict[str, Version]:
    """The lowest version each requirement admits (the highest of them where a package is named
    twice, as ``celery`` is by the package and by the ``redis`` extra)."""
    result: dict[str, Version] = {}
    for requirement in found:
        lows = [Version(s.version) for s in requirement.specifier if s.operator in _LOWER]
        if not lows:
            raise SystemExit(
                f"pyproject.toml: {requirement} declares no lower bound; declare the lowest "
                "version celery-dbeat works with (>=X), so the floors lane can test it"
            )
        name = canonicalize_name(requirement.name)
        result[name] = max([*lows, result.get(name, lows[0])])
    return result


def newest(found: Iterable[Requirement], name: str) -> str:
    """The constraint to the newest release series ``name``'s cap admits: ``<7`` admits 6.x
    (``name>=6,<7``), ``<6.1`` admits 6.0.x (``name>=6,<6.1``). Refused without a cap (``<X``):
    there is no top of the range to test."""
    name = canonicalize_name(name)
    caps = [
        Version(s.version)
        for r in found
        if canonicalize_name(r.name) == name
        for s in r.specifier
        if s.operator == "<"
    ]
    if not caps:
        raise SystemExit(f"pyproject.toml: {name} declares no upper bound (<X) to test below")
    cap = min(caps)
    major = cap.release[0]
    lowest = major - 1 if all(part == 0 for part in cap.release[1:]) else major
    return f"{name}>={lowest},<{cap}"


def group_requirements(name: str, without: Iterable[str] = (), path: Path = PYPROJECT) -> list[str]:
    """The requirements of dependency group ``name`` as written (markers kept, included groups
    expanded), but those of the packages named in ``without``."""
    groups = tomllib.loads(path.read_text())["dependency-groups"]
    left_out = {canonicalize_name(package) for package in without}

    def expand(group_name: str) -> list[str]:
        found = []
        for entry in groups[group_name]:
            if isinstance(entry, dict):
                found += expand(entry["include-group"])
            elif canonicalize_name(Requirement(entry).name) not in left_out:
                found.append(entry)
        return found

    return expand(name)


def oracles(path: Path = PYPROJECT) -> list[str]:
    """The newest exact pin of each tool in the ``test`` group where a marker keeps it from this
    Python (and an older pin stands in)."""
    group = tomllib.loads(path.read_text())["dependency-groups"]["test"]
    pins: dict[str, list[tuple[Version, bool]]] = {}
    for text in group:
        if not isinstance(text, str):
            continue
        requirement = Requirement(text)
        exact = [Version(s.version) for s in requirement.specifier if s.operator == "=="]
        applies = requirement.marker is None or requirement.marker.evaluate()
        for version in exact:
            pins.setdefault(canonicalize_name(requirement.name), []).append((version, applies))
    return [f"{name}=={max(found)[0]}" for name, found in sorted(pins.items()) if not max(found)[1]]


def main(argv: list[str]) -> int:
    table = project()
    wanted = floors(requirements(table))
    command = argv[0] if argv else "constraints"
    if command == "constraints":
        for name, version in sorted(wanted.items()):
            print(f"{name}=={version}")
    elif command == "oracles":
        print(" ".join(oracles()))
    elif command == "newest" and len(argv) == 2:
        print(newest(requirements(table), argv[1]))
    elif command == "group" and len(argv) >= 2 and all(a == "--without" for a in argv[2::2]):
        print("\n".join(group_requirements(argv[1], argv[3::2])))
    elif command == "extras":
        print(",".join(sorted(table.get("optional-dependencies", {}))))
    elif command == "check":
        wrong = []
        for name, version in sorted(wanted.items()):
            installed = Version(metadata.version(name))
            print(f"{name} {installed} (floor {version})")
            if installed != version:
                wrong.append(f"{name} {installed} is installed, not its floor {version}")
        if wrong:
            print("\n".join(wrong), file=sys.stderr)
            return 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
