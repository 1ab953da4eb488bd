"""``export`` and ``import``: schedules as a JSON or YAML file of plain forms.

The file is ``{"version": 1, "schedules": [form, ...]}`` where each form is
:func:`~celery_dbeat.definitions.definition_to_form` of a schedule, read back with
:func:`~celery_dbeat.definitions.definition_from_form`. Export -> import -> export gives the same
file, and importing a file twice changes nothing the second time.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping
from typing import IO, Any

import click

from ..api import ScheduleInfo, Schedules
from ..definitions import Definition, definition_from_form, definition_to_form
from ..errors import ValidationError
from ._common import CommandError, DBeatCommand, echo_json, progress, runtime
from ._forms import definition_of

__all__ = ["FORMAT_VERSION", "export", "import_"]

FORMAT_VERSION = 1
FORMATS = ("json", "yaml")


def _yaml() -> Any:
    try:
        return importlib.import_module("yaml")
    except ModuleNotFoundError:
        raise CommandError(
            "YAML needs PyYAML: pip install 'celery-dbeat[yaml]' (or use JSON)"
        ) from None


@functools.cache
def _loader() -> Any:
    """PyYAML's safe loader, refusing anchors and aliases.

    An alias is a reference, so a few hundred bytes of nested aliases (a "billion laughs")
    stand for billions of values, which validating the schedule would walk and serialise. An
    export never writes them; refusing the first anchor or alias keeps a file's cost to its size.
    """
    yaml = _yaml()

    def compose_node(loader: Any, parent: Any, index: Any) -> Any:
        event = loader.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
            raise yaml.composer.ComposerError(
                None,
                None,
                f"found {sign}{event.anchor}: YAML anchors and aliases are not accepted",
                event.start_mark,
            )
        return yaml.SafeLoader.compose_node(loader, parent, index)

    return type("ImportLoader", (yaml.SafeLoader,), {"compose_node": compose_node})


@functools.cache
def _dumper() -> Any:
    """PyYAML's safe dumper, writing a value seen twice out in full rather than as an alias,
    which :func:`_loader` would refuse."""
    yaml = _yaml()
    return type("ExportDumper", (yaml.SafeDumper,), {"ignore_aliases": lambda _self, _data: True})


def _format(given: str | None, file: IO[Any]) -> str:
    if given:
        return given
    name = str(getattr(file, "name", ""))
    return "yaml" if name.endswith((".yaml", ".yml")) else "json"


def dump(document: Mapping[str, Any], fmt: str) -> str:
    if fmt == "yaml":
        text: str = _yaml().dump(
            dict(document),
            Dumper=_dumper(),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
        )
        return text
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def load(text: str, fmt: str, source: str) -> list[Any]:
    """The list of forms in a file's text; refuses anything that is not such a document."""
    try:
        document = _yaml().load(text, Loader=_loader()) if fmt == "yaml" else json.loads(text)
    except RecursionError:
        raise CommandError(f"{source}: nested too deeply to read") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise CommandError(f"{source}: not valid JSON: {exc}") from None
    except Exception as exc:  # yaml.YAMLError: PyYAML is optional, so not importable here
        if type(exc).__module__.startswith("yaml"):
            raise CommandError(f"{source}: not valid YAML: {exc}") from None
        raise
    if isinstance(document, Mapping):
        version = document.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise CommandError(f"{source}: version={version!r}: this celery-dbeat reads version 1")
        document = document.get("schedules")
    if not isinstance(document, list):
        raise CommandError(f'{source}: expected {{"version": 1, "schedules": [...]}}')
    return document


@click.command("export", cls=DBeatCommand)
@click.argument("file", type=click.File("w", encoding="utf-8", atomic=True), default="-")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Default: yaml for a .yaml/.yml FILE, else json.")  # fmt: skip
@click.option("--search", metavar="TEXT", help="Only names or tasks containing TEXT.")
def export(file: IO[str], fmt: str | None, search: str | None) -> None:
    """Write every schedule (or those matching --search) to FILE (default: stdout)."""
    fmt = _format(fmt, file)
    with runtime().schedules() as schedules:
        infos = schedules.list(search=search)
    forms = []
    for info in infos:
        try:
            forms.append(definition_to_form(definition_of(info)))
        except ValidationError as exc:
            raise CommandError(f"schedule {info.name!r} cannot be exported: {exc}") from None
        except RecursionError:
            raise CommandError(
                f"schedule {info.name!r} cannot be exported: nested too deeply"
            ) from None
    if fmt == "yaml":
        _yaml()  # fail before the file is created
    file.write(dump({"version": FORMAT_VERSION, "schedules": forms}, fmt))
    if file.name != "<stdout>":
        click.echo(f"exported {len(forms)} schedules to {file.name}")


def _parse(entries: list[Any], source: str) -> list[Definition]:
    definitions: list[Definition] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{source}: schedules[{index}]"
        if not isinstance(entry, Mapping):
            raise CommandError(f"{where}: expected an object of schedule fields")
        try:
            definition = definition_from_form(entry)
        except ValidationError as exc:
            raise CommandError(f"{where} ({entry.get('name')!r}): {exc}") from None
        except RecursionError:
            raise CommandError(f"{where}: nested too deeply") from None
        if definition.name in seen:
            raise CommandError(f"{where}: name {definition.name!r} appears twice")
        seen.add(definition.name)
        definitions.append(definition)
    return definitions


def _action(definition: Definition, current: ScheduleInfo | None) -> str:
    """``created``, ``updated`` or ``unchanged``: what importing ``definition`` does."""
    if current is None:
        return "created"
    try:
        same = definition_of(current).columns() == definition.columns()
    except ValidationError:
        same = False  # a bad stored row is overwritten
    # A finished schedule cannot be resumed; its enabled flag is left as it is.
    toggle = current.enabled != definition.enabled and current.state != "finished"
    return "unchanged" if same and not toggle else "updated"


def _apply(schedules: Schedules, definition: Definition, current: ScheduleInfo | None) -> None:
    if current is None:
        schedules.create(definition)
    else:
        schedules.replace(definition.name, definition)


@click.command("import", cls=DBeatCommand)
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Default: yaml for a .yaml/.yml FILE, else json.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Only say what would change.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def import_(file: IO[str], fmt: str | None, dry_run: bool, as_json: bool) -> None:
    """Create or update, by name, the schedules of FILE ('-' for stdin).

    The whole file is checked before anything is written. Schedules not in FILE are left alone.
    """
    source = "<stdin>" if file.name == "<stdin>" else file.name
    definitions = _parse(load(file.read(), _format(fmt, file), source), source)
    report: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    with runtime().schedules() as schedules:
        current = {info.name: info for info in schedules.list()}
        plan = [(d, _action(d, current.get(d.name))) for d in definitions]
        for definition, action in plan:
            report[action].append(definition.name)
        changes = [(d, current.get(d.name)) for d, action in plan if action != "unchanged"]
        if changes and not dry_run:
            # Wake the beats once for the whole file, not once per schedule.
            notifier, schedules.notifier = schedules.notifier, None
            try:
                progress(changes, "importing", lambda change: _apply(schedules, *change))
            finally:
                if notifier is not None:
                    notifier.notify()
                    schedules.notifier = notifier
    if as_json:
        echo_json(dict(report, dry_run=dry_run))
        return
    counts = ", ".join(f"{key} {len(names)}" for key, names in report.items())
    verb = "would import" if dry_run else "imported"
    click.echo(f"{verb} {len(definitions)} schedules from {source}: {counts}")
