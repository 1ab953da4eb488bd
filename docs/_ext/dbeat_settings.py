"""The ``dbeat-settings`` directive: the table of every ``dbeat_*`` setting, read from the one
place settings are declared (the fields of :class:`celery_dbeat.config.Settings`, whose names
make :data:`celery_dbeat.config.SETTING_KEYS`).

The key and its default come from the code, so a setting added to ``config.py`` appears here by
itself; what it means comes from :data:`settings_text.MEANINGS`. A setting without a meaning
there, or a meaning for a key that is no setting, is a build warning, which the build (run with
warnings as errors by tests/unit/test_docs.py) turns into a failure.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from settings_text import DEFAULTS, MEANINGS
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration_text(delta: timedelta) -> str:
    """``30s``, ``1h``, ``30d``: a duration as the settings take it."""
    seconds = delta.total_seconds()
    if seconds == 0:
        return "0"
    for unit, size in _UNITS:
        if seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def default_text(field: dataclasses.Field[Any]) -> str:
    """The default of a Settings field as Markdown, unless ``settings_text.DEFAULTS`` words it
    (a default computed at run time, or one that needs a word of explanation)."""
    key = f"dbeat_{field.name}"
    if key in DEFAULTS:
        return DEFAULTS[key]
    if field.default is dataclasses.MISSING:
        factory = field.default_factory
        if factory is dataclasses.MISSING:
            return "(required)"
        value = factory()
    else:
        value = field.default
    if isinstance(value, timedelta):
        return f"`{duration_text(value)}`"
    if hasattr(value, "value") and isinstance(value.value, str):  # an enum such as MisfirePolicy
        return f'`"{value.value}"`'
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value!r}`"


def settings_fields() -> list[dataclasses.Field[Any]]:
    from celery_dbeat.config import SETTING_KEYS, Settings

    found = list(dataclasses.fields(Settings))
    assert tuple(f"dbeat_{f.name}" for f in found) == SETTING_KEYS
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


class SettingsTable(SphinxDirective):
    """``dbeat-settings``: one row per setting, in the order ``Settings`` declares them."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        keys = []
        lines = ["| key | default | meaning |", "| --- | --- | --- |"]
        for field in settings_fields():
            key = f"dbeat_{field.name}"
            keys.append(key)
            meaning = MEANINGS.get(key)
            if not meaning:
                logger.warning(
                    "setting %s (celery_dbeat/config.py) has no meaning in "
                    "docs/_ext/settings_text.py: say what it does there",
                    key,
                    location=self.get_location(),
                )
                meaning = ""
            lines.append(f"| `{key}` | {_cell(default_text(field))} | {_cell(meaning)} |")
        for key in sorted(set(MEANINGS) - set(keys)):
            logger.warning(
                "docs/_ext/settings_text.py describes %s, which celery_dbeat/config.py does "
                "not declare",
                key,
                location=self.get_location(),
            )
        container = nodes.container(classes=["dbeat-settings"])
        self.state.nested_parse(StringList(lines, source="dbeat-settings"), 0, container)
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("dbeat-settings", SettingsTable)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
