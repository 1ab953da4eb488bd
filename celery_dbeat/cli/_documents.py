"""The file of ``export`` and ``import``: ``{"version": 1, "schedules": [form, ...]}`` (and
``"calendars"``, :mod:`.calendar_transfer`) as JSON or YAML, where each form is
:func:`~celery_dbeat.core.definitions.definition_to_form` of a schedule, read back with
:func:`~celery_dbeat.core.definitions.definition_from_form`."""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping
from typing import IO, Any

from ..core.definitions import Definition, definition_from_form
from ..core.errors import ValidationError
from ._common import CommandError

__all__ = [
    "FORMATS",
    "FORMAT_VERSION",
    "dump",
    "file_format",
    "load",
    "load_document",
    "parse",
    "yaml_module",
]

FORMAT_VERSION = 1
FORMATS = ("json", "yaml")


def yaml_module() -> Any:
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
    yaml = yaml_module()

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
    yaml = yaml_module()
    return type("ExportDumper", (yaml.SafeDumper,), {"ignore_aliases": lambda _self, _data: True})


def file_format(given: str | None, file: IO[Any]) -> str:
    if given:
        return given
    name = str(getattr(file, "name", ""))
    return "yaml" if name.endswith((".yaml", ".yml")) else "json"


def dump(document: Mapping[str, Any], fmt: str) -> str:
    if fmt == "yaml":
        text: str = yaml_module().dump(
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
    return load_document(text, fmt, source)[0]


def load_document(text: str, fmt: str, source: str) -> tuple[list[Any], list[Any]]:
    """The forms and the calendars (``[]`` if none) of a file's text."""
    try:
        document = yaml_module().load(text, Loader=_loader()) if fmt == "yaml" else json.loads(text)
    except RecursionError:
        raise CommandError(f"{source}: nested too deeply to read") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise CommandError(f"{source}: not valid JSON: {exc}") from None
    except Exception as exc:  # yaml.YAMLError: PyYAML is optional, so not importable here
        if type(exc).__module__.startswith("yaml"):
            raise CommandError(f"{source}: not valid YAML: {exc}") from None
        raise
    calendars: Any = []
    if isinstance(document, Mapping):
        version = document.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise CommandError(f"{source}: version={version!r}: this celery-dbeat reads version 1")
        calendars = document.get("calendars", [])
        document = document.get("schedules")
    if not isinstance(document, list):
        raise CommandError(f'{source}: expected {{"version": 1, "schedules": [...]}}')
    if not isinstance(calendars, list):
        raise CommandError(f"{source}: calendars: expected a list of calendars")
    return document, calendars


def parse(entries: list[Any], source: str) -> list[Definition]:
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
