"""Which database errors are a transaction lost to another (retried at once, no outage)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from celery_dbeat.store.database import is_conflict


class PostgresError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__("server said no")
        self.sqlstate = sqlstate


def wrapped(orig: Exception) -> sa.exc.DBAPIError:
    return sa.exc.OperationalError("UPDATE ...", {}, orig)


@pytest.mark.parametrize(
    ("orig", "conflict"),
    [
        (PostgresError("40P01"), True),  # deadlock detected
        (PostgresError("40001"), True),  # serialization failure
        (PostgresError("57P01"), False),  # admin shutdown: an outage, not a conflict
        (Exception(1213, "Deadlock found"), True),  # MySQL/MariaDB
        (Exception(1205, "Lock wait timeout exceeded"), True),
        (Exception(2013, "Lost connection to server"), False),
        (Exception("no code at all"), False),
    ],
)
def test_deadlocks_and_serialisation_failures_are_conflicts_and_nothing_else(
    orig: Exception, conflict: bool
) -> None:
    assert is_conflict(wrapped(orig)) is conflict
