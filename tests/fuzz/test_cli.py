"""Random option values thrown at ``celery dbeat add`` and ``update`` (in-process, with an app):
exit 0 with a row beat can use, or a non-zero exit with one ``Error: ...`` line naming the field
or option, no traceback, and the database as it was."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from celery_dbeat.store import Store
from tests.fuzz import checks
from tests.fuzz.conftest import fuzz_settings
from tests.fuzz.strategies import (
    BAD_ZONES,
    FIXED_ZONES,
    KNOWN_ZONES,
    cron_expressions,
    duration_strings,
    instant_strings,
    oracle_cron_expressions,
    payloads,
)
from tests.integration.cli.conftest import Cli, make_app

#: ``Error: field=value: problem`` for a bad value (exit 1).
FIELD_ERROR = re.compile(r"^Error: ([a-z_]+(?:\.[a-z_]+)?)=")
#: Text a user can type: no NUL (argv cannot hold one).
TYPED = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=12
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=repr)


DURATION_TEXT = st.one_of(
    duration_strings(),
    st.sampled_from(["5m", "1h30m", "30s", "0", "-1", "nan", "inf", "1e309", "", "soon"]),
    st.integers(-10, 10**9).map(str),
    TYPED,
)
JSON_TEXT = {
    shape: st.one_of(payloads(shape).map(_text), TYPED) for shape in ("list", "dict", "options")
}
SPEC_OPTIONS: dict[str, st.SearchStrategy[str]] = {
    "--cron": st.one_of(cron_expressions(), oracle_cron_expressions(), oracle_cron_expressions()),
    "--every": DURATION_TEXT,
    "--at": instant_strings(),
}
FIELD_OPTIONS: dict[str, st.SearchStrategy[str]] = {
    "--tz": st.one_of(
        st.sampled_from(FIXED_ZONES + KNOWN_ZONES), st.sampled_from(BAD_ZONES), TYPED
    ),
    "--dst-gap": st.sampled_from(["gap_end", "shift", "skip", "later", ""]),
    "--dst-fold": st.sampled_from(["first", "second", "both", "twice", ""]),
    "--cron-days": st.sampled_from(["any", "all", "some", ""]),
    "--args": JSON_TEXT["list"],
    "--kwargs": JSON_TEXT["dict"],
    "--options": JSON_TEXT["options"],
    "--queue": TYPED,
    "--priority": st.one_of(st.integers(-5, 300).map(str), TYPED),
    "--start-at": st.one_of(instant_strings(), st.just("")),
    "--end-at": st.one_of(instant_strings(), st.just("")),
    "--max-runs": st.one_of(st.integers(-2, 5).map(str), TYPED),
    "--misfire-policy": st.one_of(st.sampled_from(["skip", "latest", "earliest", "all"]), TYPED),
    "--misfire-grace": DURATION_TEXT,
    "--catchup-limit": st.one_of(st.integers(-2, 200).map(str), TYPED),
    "--jitter": DURATION_TEXT,
}


@st.composite
def command_options(draw: st.DrawFn, *, spec_required: bool) -> list[str]:
    spec_count = draw(
        st.sampled_from([1, 1, 1, 1, 1, 1, 1, 2] + ([] if spec_required else [0, 0, 0]))
    )
    if spec_required and draw(st.integers(0, 15)) == 0:
        spec_count = 0
    options: list[str] = []
    for flag in draw(st.permutations(sorted(SPEC_OPTIONS)))[:spec_count]:
        options += [flag, draw(SPEC_OPTIONS[flag])]
    for flag in draw(st.lists(st.sampled_from(sorted(FIELD_OPTIONS)), max_size=2, unique=True)):
        options += [flag, draw(FIELD_OPTIONS[flag])]
    if "--cron" in options and draw(st.booleans()):
        options += ["--tz", draw(st.sampled_from(FIXED_ZONES + KNOWN_ZONES))]
    if draw(st.booleans()):
        options += ["--args", draw(st.sampled_from(["[]", '[1, "a"]', '[{"k": null}]']))]
    return options


def _check_failure(result: Any, before: Any, engine: Any) -> str:
    output = result.output
    assert "Traceback" not in output, output
    assert isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (1, 2), (result.exit_code, output)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    if result.exit_code == 1:
        assert len(result.stderr.splitlines()) == 1, result.stderr
        match = FIELD_ERROR.match(errors[0])
        assert match is not None, errors[0]
        field = match.group(1)
        assert field in checks.FIELDS or field.startswith("options."), errors[0]
        assert result.stdout == ""
    else:  # a malformed command line: click names the option or says what to give
        assert "--" in errors[0] or "'" in errors[0], errors[0]
        field = "usage"
    assert checks.snapshot(engine) == before, "a refused command changed the database"
    return field


@fuzz_settings(scale=1)
@given(options=command_options(spec_required=True))
def test_add_exits_0_with_a_usable_row_or_non_zero_with_one_error_line_and_no_row(
    migrated_sqlite_url: str, options: list[str]
) -> None:
    cli = Cli(make_app(migrated_sqlite_url))
    store = Store(migrated_sqlite_url)
    try:
        checks.clear(store.engine)
        before = checks.snapshot(store.engine)
        result = cli("add", "fz", "proj.tasks.fz", *options)
        if result.exit_code != 0:
            event(f"refused: {_check_failure(result, before, store.engine)}")
            return
        assert result.stderr == "", result.output
        assert result.stdout.startswith("added 'fz'"), result.output
        row = checks.stored(store.engine, "fz")
        event(f"accepted: {row.kind}")
        payload = {c: json.loads(getattr(row, c)) for c in ("args", "kwargs", "options")}
        checks.assert_usable(store, "fz", row.created_at, payload)
    finally:
        store.close()


@fuzz_settings(scale=0.5)
@given(options=command_options(spec_required=False))
def test_update_exits_0_with_a_usable_row_or_non_zero_changing_nothing(
    migrated_sqlite_url: str, options: list[str]
) -> None:
    cli = Cli(make_app(migrated_sqlite_url))
    store = Store(migrated_sqlite_url)
    try:
        checks.clear(store.engine)
        cli.ok("add", "fz", "proj.tasks.fz", "--every", "5m", "--args", "[1]")
        before = checks.snapshot(store.engine)
        result = cli("update", "fz", *options)
        if result.exit_code != 0:
            event(f"refused: {_check_failure(result, before, store.engine)}")
            return
        assert result.stderr == "", result.output
        row = checks.stored(store.engine, "fz")
        event(f"accepted: {row.kind}")
        payload = {c: json.loads(getattr(row, c)) for c in ("args", "kwargs", "options")}
        checks.assert_usable(store, "fz", row.updated_at, payload)
    finally:
        store.close()
