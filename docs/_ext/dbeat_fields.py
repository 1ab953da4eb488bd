"""The ``dbeat-fields`` directive: the list of a schedule's keyword arguments
(:class:`celery_dbeat.core.fields.ScheduleFields`), each with its type and the help the forms show,
read from their one declaration, so a field added there appears here by itself.
"""

from __future__ import annotations

import re
from typing import Any, get_type_hints

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def type_text(hint: Any) -> str:
    """``Sequence[Any] | str``: a type as the code spells it, without module paths."""
    if isinstance(hint, type):
        return hint.__name__
    return re.sub(r"\b(?:[a-z_]+\.)+", "", str(hint))


class FieldsList(SphinxDirective):
    """``dbeat-fields``: one item per keyword, in the order ``ScheduleFields`` declares them."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from celery_dbeat.core.fields import BY_NAME, ScheduleFields

        lines = [
            f"- `{name}` (`{type_text(hint)}`): {BY_NAME[name].help}"
            for name, hint in get_type_hints(ScheduleFields).items()
        ]
        container = nodes.container(classes=["dbeat-fields"])
        self.state.nested_parse(StringList(lines, source="dbeat-fields"), 0, container)
        return [container]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("dbeat-fields", FieldsList)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
