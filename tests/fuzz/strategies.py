"""Hypothesis strategies for every input a user can give a schedule, good and bad.

Each strategy mixes values that must be accepted with near misses and garbage, so one property
can say "accepted and usable, or refused with the standard error". The ranges straddle the
product's bounds (instants in the years 1900 to 9000, whole numbers up to 2**31 - 1, durations up
to 100 years); the far edges (year 1 and 9999, 5,000-digit integers, nesting past the recursion
limit) are pinned in ``test_regressions.py``.
"""

from __future__ import annotations

import json
import math
import string
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, cast
from zoneinfo import available_timezones

from hypothesis import strategies as st

from celery_dbeat import Cron, Every, Once, Solar
from celery_dbeat.core.misfire import MisfirePolicy
from celery_dbeat.core.timing.cron import HOST_DEPENDENT_ZONE
from celery_dbeat.core.validation import ALLOWED_OPTIONS

UTC = timezone.utc
#: Instants are drawn in these years, across the product's bounds (1900 to 9000).
SANE_YEARS = (1850, 9100)
#: Years of the clock a schedule is created at: a wall clock, not user input.
CLOCK_YEARS = (1971, 2300)
#: Whole numbers for max_runs/catchup_limit are drawn up to here, past PostgreSQL's INTEGER.
INT32_MAX = 2**33
#: Durations given as a timedelta are drawn up to here, past the 100-year bound.
LONGEST = timedelta(days=40_000)

# Cron ----------------------------------------------------------------------------------------

_MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
#: (low, high) of each field: minute, hour, day of month, month, day of week, second.
BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6), (0, 59))
ALIASES = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"]


def _odd_case(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from([text, text.upper(), text.capitalize()])


def _value(index: int, *, wide: bool) -> st.SearchStrategy[str]:
    low, high = BOUNDS[index]
    numbers = st.integers(low, high)
    if wide:  # one past each end, and far outside
        numbers = st.one_of(numbers, st.sampled_from([low - 1, high + 1, high + 2, 10**20]))
    strategies = [numbers.map(str)]
    if index == 3:
        strategies.append(st.sampled_from(_MONTH_NAMES).flatmap(_odd_case))
    if index == 4:
        strategies.append(st.sampled_from(_DAY_NAMES).flatmap(_odd_case))
        if wide:
            strategies.append(st.just("7"))
    return st.one_of(*strategies)


def cron_field(index: int, *, wide: bool = True) -> st.SearchStrategy[str]:
    """One field: ``*``, values, names, ranges (some backwards), steps, lists; with ``wide``
    also out-of-range values, ``L``/``W``/``#``, ``?``, ``R``/``H`` and junk."""
    value = _value(index, wide=wide)
    low, high = BOUNDS[index]
    step = st.integers(1, high - low + 1 if not wide else high + 5)
    span = st.tuples(value, value).map(lambda p: f"{p[0]}-{p[1]}")
    parts = [
        st.just("*"),
        value,
        span,
        st.tuples(span, step).map(lambda p: f"{p[0]}/{p[1]}"),
        step.map(lambda n: f"*/{n}"),
        st.tuples(value, step).map(lambda p: f"{p[0]}/{p[1]}"),
    ]
    single = st.one_of(*parts)
    listed = st.lists(single, min_size=2, max_size=3).map(",".join)
    choices = [single, listed]
    if wide:
        specials = ["?", "R", "H", "H/5", "r", "*/0", "", "-", "1-", ",", "1,,2", "*/", "**"]
        if index == 2:
            specials += ["L", "15W", "LW", "L-3", "32W"]
        if index == 4:
            specials += ["5L", "1#2", "mon#3", "1#6", "L"]
        choices.append(st.sampled_from(specials))
        choices.append(
            st.text(alphabet=string.punctuation + "\u0663\uff15x", min_size=1, max_size=3)
        )
    return st.one_of(*choices)


@st.composite
def cron_expressions(draw: st.DrawFn) -> str:
    """Cron expressions of every shape: valid 5- and 6-field ones, aliases, garbage, unicode."""
    shape = draw(st.sampled_from(["five", "five", "five", "six", "alias", "count", "junk"]))
    if shape in ("five", "six"):
        fields = [draw(cron_field(i)) for i in range(5 if shape == "five" else 6)]
        separator = draw(st.sampled_from([" ", " ", " ", "  ", "\t"]))
        text = separator.join(fields)
        return draw(st.sampled_from([text, f" {text} ", text + "\n"]))
    if shape == "alias":
        return draw(
            st.one_of(
                st.sampled_from(ALIASES).flatmap(_odd_case),
                st.sampled_from(["@reboot", "@every 5m", "@", "@hourly * *", "@ hourly"]),
            )
        )
    if shape == "count":  # wrong number of fields
        count = draw(st.sampled_from([0, 1, 3, 4, 7, 8]))
        return " ".join(draw(cron_field(i % 5, wide=False)) for i in range(count))
    return draw(
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(["* * * * * * *", "0 0 30 2 *", "0 0 31 4 *", "\x00", "*" * 300]),
            st.integers(0, 10**30).map(lambda n: f"{n} * * * *"),
        )
    )


#: A field every library reads the same way (cronsim as Debian cron, croniter after our
#: normalisation): values, lists, proper ranges and ``*/n``.
def _oracle_field(index: int) -> st.SearchStrategy[str]:
    low, high = BOUNDS[index]
    value = st.integers(low, high)
    span = st.integers(low, high - 1).flatmap(
        lambda a: st.integers(a + 1, high).map(lambda b: f"{a}-{b}")
    )
    step = st.integers(1, high - low)
    single = st.one_of(
        st.just("*"),
        value.map(str),
        span,
        st.tuples(span, step).map(lambda p: f"{p[0]}/{p[1]}"),
        step.map(lambda n: f"*/{n}"),
    )
    return st.one_of(
        single, st.lists(st.one_of(value.map(str), span), min_size=2, max_size=3).map(",".join)
    )


@st.composite
def oracle_cron_expressions(draw: st.DrawFn) -> str:
    """Five-field expressions that cronsim must agree with (``tests/unit/test_cron_vs_cronsim``).
    Days of month stop at 28 so that no expression is rare enough to make the check slow."""
    fields = [
        draw(_oracle_field(0)),
        draw(_oracle_field(1)),
        draw(st.one_of(st.just("*"), _oracle_field(2).filter(lambda f: "29" not in f))),
        draw(st.one_of(st.just("*"), _oracle_field(3))),
        draw(st.one_of(st.just("*"), _oracle_field(4))),
    ]
    return " ".join(fields)


# Zones ---------------------------------------------------------------------------------------

KNOWN_ZONES = sorted(
    z
    for z in available_timezones()
    if not z.startswith("SystemV") and not HOST_DEPENDENT_ZONE.match(z)
)
#: Zones without DST or offset changes: cron slots there can be checked against cronsim.
FIXED_ZONES = ["UTC", "Etc/UTC", "Etc/GMT+5", "Etc/GMT-14", "Etc/GMT-5"]
BAD_ZONES = [
    "",
    " ",
    "Mars/Olympus",
    "utc ",
    "Europe/paris",
    "EUROPE/PARIS",
    "europe/London",
    "+05:45",
    "-03:30",
    "UTC+5",
    "GMT+05:45",
    "../etc/passwd",
    "/etc/localtime",
    "localtime",
    "Factory",
    "right/UTC",
    "Europe//Paris",
    "Europe/Paris/",
    "Europe/Paris\x00",
    "America/New York",
    "x" * 65,
    "Ĳ/Ĳ",
]


def timezones() -> st.SearchStrategy[Any]:
    """IANA names, near misses (case, offsets, paths) and values of the wrong type."""
    return st.one_of(
        st.sampled_from(KNOWN_ZONES),
        st.sampled_from(FIXED_ZONES),
        st.sampled_from(BAD_ZONES),
        st.sampled_from(KNOWN_ZONES).map(str.lower),
        st.text(max_size=20),
    )


# Durations -----------------------------------------------------------------------------------

_UNITS = ["ms", "s", "m", "h", "d"]


@st.composite
def duration_strings(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.tuples(
                st.one_of(
                    st.integers(0, 10**6).map(str),
                    st.floats(0, 1e5, allow_nan=False).map(lambda f: f"{f:.3f}"),
                ),
                st.sampled_from(_UNITS).flatmap(_odd_case),
            ),
            min_size=1,
            max_size=3,
        )
    )
    text = "".join(n + u for n, u in parts)
    sign = draw(st.sampled_from(["", "", "", "-", "+", " "]))
    return sign + text


def durations() -> st.SearchStrategy[Any]:
    """Seconds, ``timedelta``s and duration strings: fine, zero, negative, NaN, infinite, huge,
    malformed, or of the wrong type."""
    return st.one_of(
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(0.5, 1e6),
        st.timedeltas(min_value=-LONGEST, max_value=LONGEST),
        duration_strings(),
        st.sampled_from(
            [
                "5m",
                "1h30m",
                "250ms",
                "30s",
                "1.5h",
                "0",
                "0s",
                "-5m",
                "nan",
                "inf",
                "-inf",
                "1e309",
                "1e3",
                "5x",
                "m",
                "h1",
                "1h-30m",
                "",
                "  ",
                "\uff13\uff10s",  # fullwidth digits
                "36500d",
                "36501d",
                "1_000",
            ]
        ),
        st.sampled_from([True, False, [], {}, object(), Decimal("5"), b"5m"]),
        st.text(max_size=8),
    )


# Instants ------------------------------------------------------------------------------------

#: Offsets of every shape Python allows: whole hours, +05:45, seconds, microseconds.
OFFSETS = st.one_of(
    st.just(UTC),
    st.integers(-23 * 3600, 23 * 3600).map(lambda s: timezone(timedelta(seconds=s))),
    st.sampled_from([timedelta(hours=5, minutes=45), timedelta(microseconds=-1)]).map(timezone),
)


def aware_instants(years: tuple[int, int] = SANE_YEARS) -> st.SearchStrategy[datetime]:
    low, high = years
    return st.datetimes(
        min_value=datetime(low, 1, 2), max_value=datetime(high, 12, 30), timezones=OFFSETS
    )


def instants() -> st.SearchStrategy[datetime]:
    """Aware datetimes of any offset, and naive ones. (Strings, dates and numbers go through the
    plain-form and CLI properties; the typed API's crash on them is in test_regressions.py.)"""
    low, high = SANE_YEARS
    naive = st.datetimes(min_value=datetime(low, 1, 2), max_value=datetime(high, 12, 30))
    return st.one_of(aware_instants(), aware_instants(), naive)


@st.composite
def instant_strings(draw: st.DrawFn) -> str:
    """What a user types for ``--at``/``--start-at``: ISO-8601 with or without offset, junk."""
    instant = draw(aware_instants())
    typed: str = draw(
        st.one_of(
            st.just(instant.isoformat()),
            st.just(instant.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"),
            st.just(instant.replace(tzinfo=None).isoformat()),
            st.just(instant.date().isoformat()),
            st.just(instant.strftime("%Y-%m-%d %H:%M:%S%z")),
            st.sampled_from(["now", "tomorrow", "2024-13-01T00:00:00Z", "2024-02-30T00:00Z", ""]),
            st.text(max_size=12),
        )
    )
    return typed


# JSON ----------------------------------------------------------------------------------------

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)


def json_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """Plain JSON values: dict keys are strings at every level."""
    return st.recursive(
        _JSON_SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


class Opaque:
    """An object no JSON encoder knows."""

    def __repr__(self) -> str:
        return "<Opaque>"


NOT_SERIALISABLE = st.sampled_from(
    [
        {1, 2},
        frozenset(),
        Opaque(),
        datetime(2024, 1, 1, tzinfo=UTC),
        date(2024, 1, 1),
        Decimal("1.5"),
        float("nan"),
        float("inf"),
        b"\xff",
        complex(1, 2),
        math,
    ]
)


def _json_text(values: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    return values.map(json.dumps)


def payloads(shape: str) -> st.SearchStrategy[Any]:
    """``args`` (shape ``list``), ``kwargs`` (``dict``) or ``options`` (``options``) as Python
    values and as JSON text: well formed, of the wrong shape, not JSON, deeply nested (within the
    interpreter's recursion limit) or holding objects JSON cannot encode."""
    if shape == "list":
        plain: st.SearchStrategy[Any] = st.lists(json_values(), max_size=4)
        right = st.one_of(plain, plain.map(tuple))
    elif shape == "dict":
        right = plain = st.dictionaries(st.text(max_size=8), json_values(), max_size=4)
    else:
        right = plain = options_values()
    wrong = st.one_of(json_values(), st.dictionaries(st.integers(), json_values(), max_size=2))
    with_opaque = st.one_of(
        st.lists(NOT_SERIALISABLE, min_size=1, max_size=2),
        st.dictionaries(st.text(max_size=3), NOT_SERIALISABLE, min_size=1, max_size=2),
    )
    deep = st.integers(20, 200).map(nested)
    if shape == "dict":
        deep = deep.map(lambda v: {"k": v})
    return st.one_of(
        right,
        right,
        _json_text(plain),
        wrong,
        _json_text(wrong),
        with_opaque,
        deep,
        _json_text(deep),
        st.sampled_from(["", "[1, 2", "{'a': 1}", "NaN", "[NaN]", "null", "1", "[1] [2]", "\x00"]),
        st.text(max_size=10),
        st.none(),
    )


OPTION_KEYS = sorted(ALLOWED_OPTIONS)


def options_values() -> st.SearchStrategy[dict[str, Any]]:
    """Option mappings from the allowed keys (and a few refused ones), values of any type."""
    value = st.one_of(
        st.text(max_size=8),
        st.integers(-5, 300),
        st.floats(-10, 1e6, allow_nan=False),
        st.booleans(),
        st.none(),
        st.dictionaries(st.text(max_size=4), _JSON_SCALARS, max_size=2),
    )
    keys = st.one_of(
        st.sampled_from(OPTION_KEYS),
        st.sampled_from(OPTION_KEYS),
        st.sampled_from(["eta", "task_id", "link", "Queue"]),
    )
    return st.dictionaries(keys, value, max_size=3)


# Everything else -----------------------------------------------------------------------------

POLICIES = st.one_of(
    st.none(),
    st.sampled_from([p.value for p in MisfirePolicy]),
    st.sampled_from(list(MisfirePolicy)),
    st.sampled_from(["LATEST", "Skip", "sometimes", "", " all", 0, 1.5, [], "none"]),
)

WHOLE = st.one_of(
    st.none(),
    st.integers(-3, 5),
    st.integers(-(2**31), INT32_MAX),
    st.sampled_from([True, False, 1.0, 2.5, "3", "x", float("nan")]),
)

NAMES = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_.:-]{0,20}", fullmatch=True),
    st.sampled_from(["", " ", "x" * 200, "x" * 201, "ñame", "名前", "a b"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    st.sampled_from([None, 5, b"name"]),
)
TASKS = st.one_of(
    st.from_regex(r"proj\.tasks\.[a-z]{1,10}", fullmatch=True),
    st.sampled_from(["", "  ", "t" * 255, "t" * 256, "tâche", None, 3]),
)


@st.composite
def specs(draw: st.DrawFn) -> Any:
    """A ``schedule`` argument: Cron, Every, Once or Solar with fuzzed fields, a mapping, or
    something that is no spec."""
    kind = draw(st.sampled_from(["cron"] * 4 + ["every"] * 3 + ["once"] * 2 + ["solar", "other"]))
    if kind == "cron":
        return Cron(
            draw(st.one_of(cron_expressions(), oracle_cron_expressions())),
            draw(st.one_of(st.just("UTC"), timezones())),
            dst_gap=draw(st.sampled_from([None, "gap_end", "shift", "skip", "later", ""])),
            dst_fold=draw(st.sampled_from([None, "first", "second", "both", "twice", ""])),
            days=draw(st.sampled_from(["any", "any", "all", "some"])),
        )
    if kind == "every":
        return Every(draw(durations()))
    if kind == "once":
        return Once(draw(instants()))
    if kind == "solar":
        return Solar(
            draw(st.sampled_from(["sunset", "sunrise", "solar_noon", "dawn_civil", "noon", ""])),
            # wrong types on purpose: the spec must refuse them
            cast(
                Any, draw(st.one_of(st.floats(-100, 100), st.sampled_from([float("nan"), "48.8"])))
            ),
            cast(Any, draw(st.one_of(st.floats(-190, 190), st.sampled_from([float("inf"), None])))),
        )
    return draw(
        st.sampled_from(
            [None, "* * * * *", 60, timedelta(minutes=1), {"kind": "interval"}, {"every": 5}]
        )
    )


#: Values that are always valid, for the options an example does not fuzz.
VALID_OPTIONS: dict[str, st.SearchStrategy[Any]] = {
    "args": st.lists(json_values(), max_size=3),
    "kwargs": st.dictionaries(st.text(max_size=5), json_values(), max_size=3),
    "options": st.fixed_dictionaries({}, optional={"queue": st.text(max_size=5)}),
    "enabled": st.booleans(),
    "start_at": st.one_of(st.none(), aware_instants()),
    "end_at": st.none(),
    "max_runs": st.one_of(st.none(), st.integers(1, 5)),
    "misfire_policy": st.sampled_from([None, *(p.value for p in MisfirePolicy)]),
    "misfire_grace": st.sampled_from([None, 30, "5m", timedelta(hours=1)]),
    "catchup_limit": st.one_of(st.none(), st.integers(0, 5)),
    "jitter": st.sampled_from([None, 0, 1, "30s", "10m"]),
}


@st.composite
def valid_specs(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["cron", "every", "once"]))
    if kind == "cron":
        return Cron(
            draw(oracle_cron_expressions()), draw(st.sampled_from(FIXED_ZONES + KNOWN_ZONES[:40]))
        )
    if kind == "every":
        return Every(draw(st.one_of(st.integers(1, 10**6), st.sampled_from(["5m", "1h30m", "1s"]))))
    return Once(draw(aware_instants()))


@st.composite
def add_arguments(draw: st.DrawFn) -> dict[str, Any]:
    """Keyword arguments of ``Schedules.add`` (name, task, schedule and every option): mostly
    valid, with up to three of them fuzzed, so that both outcomes are common."""
    optional: dict[str, st.SearchStrategy[Any]] = {
        "args": payloads("list"),
        "kwargs": payloads("dict"),
        "options": payloads("options"),
        "enabled": st.one_of(st.booleans(), st.sampled_from([0, 1, "yes", None])),
        "start_at": st.one_of(st.none(), instants()),
        "end_at": st.one_of(st.none(), instants()),
        "max_runs": WHOLE,
        "misfire_policy": POLICIES,
        "misfire_grace": st.one_of(st.none(), durations()),
        "catchup_limit": WHOLE,
        "jitter": st.one_of(st.none(), durations()),
    }
    fuzzed = set(
        draw(st.lists(st.sampled_from(["name", "task", "schedule", *optional]), max_size=3))
    )
    arguments: dict[str, Any] = {
        "name": draw(NAMES if "name" in fuzzed else st.from_regex(r"[a-z]{1,12}", fullmatch=True)),
        "task": draw(TASKS if "task" in fuzzed else st.just("proj.tasks.fuzz")),
        "schedule": draw(specs() if "schedule" in fuzzed else valid_specs()),
    }
    for key, strategy in optional.items():
        if key in fuzzed:
            arguments[key] = draw(strategy)
        elif draw(st.booleans()):
            arguments[key] = draw(VALID_OPTIONS[key])
    return arguments
