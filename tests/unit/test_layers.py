"""The package's layers: the core is pure, importing any of its modules loads neither SQLAlchemy
nor Alembic nor Redis nor Celery (import-linter checks every import in CI; this checks what a
process really loads); and no module imports itself back through a chain of imports (the import
graph is grimp's, import-linter's own, with the imports inside functions and ``TYPE_CHECKING``
blocks: hiding an import there puts off a cycle, it does not break it)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import grimp
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


#: Cycles left in on purpose, each the set of its modules with the reason it cannot be broken.
#: None so far: the version is in ``_version.py`` (not the package's ``__init__``, which imports
#: the beat), the API's count check in ``core/counts.py``, ``calendars.py`` types the API it
#: belongs to with a Protocol, and the Django settings (``contrib/django/conf.py``) learn of a
#: reset through ``on_reset`` hooks instead of importing the modules that cache what they read.
ALLOWED_CYCLES: frozenset[frozenset[str]] = frozenset()


def import_cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """Each set of modules that import one another in a loop (a strongly connected component
    of the graph: a module with every module it both reaches and is reached from)."""
    found = set()
    for module in graph.modules:
        loop = graph.find_upstream_modules(module) & graph.find_downstream_modules(module)
        if loop:
            found.add(frozenset({module, *loop}))
    return found


def described(graph: grimp.ImportGraph, cycle: frozenset[str]) -> str:
    """The imports that close ``cycle``, with their lines."""
    imports = [
        f"  {detail['importer']}:{detail['line_number']} {detail['line_contents']}"
        for importer in sorted(cycle)
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & cycle)
        for detail in graph.get_import_details(importer=importer, imported=imported)
    ]
    return "\n".join([" <-> ".join(sorted(cycle)), *imports])


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("celery_dbeat", cache_dir=None)


def test_no_module_of_the_package_imports_itself_back(graph: grimp.ImportGraph) -> None:
    cycles = import_cycles(graph) - ALLOWED_CYCLES
    assert not cycles, "import cycles (break them, or justify one in ALLOWED_CYCLES):\n" + (
        "\n".join(described(graph, cycle) for cycle in sorted(cycles, key=sorted))
    )


def test_the_cycle_check_sees_imports_in_functions_and_type_checking_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "cyclic"
    package.mkdir()
    modules = {
        "__init__.py": "",
        "a.py": "def f():\n    from .b import g\n",
        "b.py": "from . import a\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
        "d.py": "from .c import *\n",
    }
    for name, text in modules.items():
        (package / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))

    found = import_cycles(grimp.build_graph("cyclic", cache_dir=None))

    assert found == {frozenset({"cyclic.a", "cyclic.b"}), frozenset({"cyclic.c", "cyclic.d"})}


def test_the_django_settings_never_reach_the_tables_check(graph: grimp.ImportGraph) -> None:
    """``tables.py`` reads the settings; the settings tell it of a reset through ``on_reset``."""
    assert graph.direct_import_exists(
        importer="celery_dbeat.contrib.django.tables", imported="celery_dbeat.contrib.django.conf"
    )
    assert not graph.chain_exists(
        importer="celery_dbeat.contrib.django.conf", imported="celery_dbeat.contrib.django.tables"
    )
