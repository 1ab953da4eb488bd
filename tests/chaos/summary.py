"""The chaos suite's summary table, printed at the end of the pytest run.

Each scenario puts its row in its test report's ``user_properties``; the hooks in
``tests/conftest.py`` gather them from the reports and print the table. Under pytest-xdist the
scenarios run in a worker, and only their reports reach the process that prints, which loads
``tests/conftest.py`` but not this directory's conftest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import pytest

from tests.chaos.truth import Outcome

#: Summary rows of the scenarios that ran, gathered from the test reports: under pytest-xdist
#: the scenarios run in a worker, and only the reports reach the process that prints the table.
_ROWS: list[list[str]] = []
_HEADER = (
    "scenario",
    "beats",
    "schedules",
    "expected fires",
    "messages",
    "duplicates",
    "lost",
    "repeated ids",
    "worst lag (s)",
    "time (s)",
)


def summary_row(o: Outcome) -> list[str]:
    return [
        o.scenario.removeprefix("test_"),
        str(o.beats),
        str(o.schedules),
        str(o.expected),
        str(o.received),
        str(len(o.duplicates)),
        str(len(o.lost)),
        f"{len(o.repeats)} ({len(o.unexplained_repeats)} undocumented)",
        f"{o.worst_lag:.2f}",
        f"{o.seconds:.0f}",
    ]


def gather(report: pytest.TestReport) -> None:
    if report.when == "call":
        _ROWS.extend(
            cast(list[str], value) for name, value in report.user_properties if name == "chaos"
        )


def print_table(terminalreporter: pytest.TerminalReporter) -> None:
    if not _ROWS:
        return
    header, rows = _HEADER, [tuple(row) for row in _ROWS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    terminalreporter.section("chaos summary")
    for row in [header, tuple("-" * w for w in widths), *rows]:
        terminalreporter.write_line(
            " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        )
    if os.environ.get("DBEAT_CHAOS_MARKDOWN"):
        lines = [
            "| " + " | ".join(header) + " |",
            "|" + "|".join(" --- " for _ in header) + "|",
            *("| " + " | ".join(row) + " |" for row in rows),
        ]
        Path(os.environ["DBEAT_CHAOS_MARKDOWN"]).write_text("\n".join(lines) + "\n")
