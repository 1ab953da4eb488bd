"""The hint for a name that is not known: `` (did you mean X?)`` with the known name closest to
it. One rule for every name people type: a setting's key, a schedule's task, a calendar."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]

#: How alike (difflib's ratio, compared without case) a known name must be to be suggested.
CUTOFF = 0.75


def did_you_mean(
    written: str, known: Iterable[str], *, prefix: str = "", as_written: bool = False
) -> str:
    """`` (did you mean X?)`` with the name of ``known`` closest to ``written``, or ``""``.

    ``written`` starts with ``prefix`` (a namespace such as ``CELERY_``), which is kept but not
    compared. The suggestion is spelt as ``known`` spells it, or with ``as_written`` (setting
    keys, read in either case) in upper case when ``written`` is."""
    choices = {choice.lower(): choice for choice in known}
    bare = written[len(prefix) :].lower()
    close = difflib.get_close_matches(bare, list(choices), n=1, cutoff=CUTOFF)
    if not close:
        return ""
    meant = prefix + choices[close[0]]
    if as_written and written.isupper():
        meant = meant.upper()
    return f" (did you mean {meant}?)"
