"""Sphinx configuration of the celery-dbeat manual (pages in Markdown through MyST-Parser).

Build it with ``.venv/bin/sphinx-build -W -b html docs docs/_build/html``;
tests/unit/test_docs.py builds it the same way, with warnings as errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

from celery_dbeat import __version__  # noqa: E402

project = "celery-dbeat"
author = "celery-dbeat developers"
copyright = "celery-dbeat developers"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_click",
    "dbeat_settings",
    "dbeat_fields",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Markdown: ``#heading-anchors`` for links within and across pages, ``:::`` fences for
# directives, definition lists.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
# Options and durations are typed as written: no "--json" turned into an en dash.
smartquotes = False

# The reference is read from the code: the names each module exports (its __all__), in the order
# the source gives them, with the signatures' type hints in the description.
autodoc_default_options = {
    "members": True,
    "member-order": "bysource",
    "show-inheritance": True,
}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True

try:
    import furo  # noqa: F401

    html_theme = "furo"
except ImportError:  # pragma: no cover - furo is in the dev group
    html_theme = "alabaster"
html_title = f"celery-dbeat {release}"
