"""``--slot-kwarg`` and ``--previous-slot-kwarg``: set, shown (``--json``), cleared and exported
like the other options; a bad name, or one the app's registered task cannot take, is refused in
one line naming the field, with exit 1."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.cli.conftest import Cli, shown


def test_the_slot_keywords_are_set_shown_cleared_and_exported_like_other_options(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok(
        "add",
        "report",
        "proj.tasks.report",
        "--cron",
        "0 * * * *",
        "--slot-kwarg",
        "slot",
        "--previous-slot-kwarg",
        "previous",
    )
    data = shown(cli, "report")
    assert (data["slot_kwarg"], data["previous_slot_kwarg"]) == ("slot", "previous")
    next_run = data["next_run_at"]

    document = json.loads(cli.ok("export"))
    (exported,) = document["schedules"]
    assert (exported["slot_kwarg"], exported["previous_slot_kwarg"]) == ("slot", "previous")

    cli.ok("update", "report", "--previous-slot-kwarg", "")
    data = shown(cli, "report")
    assert (data["slot_kwarg"], data["previous_slot_kwarg"]) == ("slot", None)
    assert data["next_run_at"] == next_run  # a payload edit

    path = tmp_path / "schedules.json"
    path.write_text(json.dumps(document))
    report = json.loads(cli.ok("import", str(path), "--json"))
    assert report["updated"] == ["report"]
    assert shown(cli, "report")["previous_slot_kwarg"] == "previous"


def test_a_bad_slot_keyword_is_refused_in_one_line_naming_the_field(cli: Cli) -> None:
    cli.ok("add", "report", "proj.tasks.report", "--every", "1m", "--kwargs", '{"when": 1}')

    error = cli.fails("update", "report", "--slot-kwarg", "the slot", code=1, fragment="slot_kwarg")
    assert "Python identifier" in error
    error = cli.fails("update", "report", "--slot-kwarg", "when", code=1, fragment="slot_kwarg")
    assert "key of kwargs" in error
    assert shown(cli, "report")["slot_kwarg"] is None


def test_a_keyword_the_apps_registered_task_cannot_take_is_refused(cli: Cli) -> None:
    @cli.app.task(name="proj.defined.plain", shared=False)
    def plain(day: str) -> None: ...

    @cli.app.task(name="proj.defined.slotted", shared=False)
    def slotted(day: str, **kwargs: object) -> None: ...

    error = cli.fails(
        "add",
        "report",
        "proj.defined.plain",
        "--every",
        "1m",
        "--args",
        '["mon"]',
        "--slot-kwarg",
        "slot",
        code=1,
        fragment="slot_kwarg='slot'",
    )
    assert "task 'proj.defined.plain' takes no keyword argument 'slot'" in error
    assert json.loads(cli.ok("list", "--json")) == []
    cli.ok(
        "add",
        "report",
        "proj.defined.slotted",
        "--every",
        "1m",
        "--args",
        '["mon"]',
        "--slot-kwarg",
        "slot",
    )
    assert shown(cli, "report")["slot_kwarg"] == "slot"
