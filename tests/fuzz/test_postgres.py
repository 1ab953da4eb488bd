"""A smaller run of the API property against PostgreSQL (timestamptz, DOUBLE PRECISION, INTEGER
and text columns behave differently from SQLite's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hypothesis import given

from celery_dbeat.store import Store
from tests.fuzz.conftest import fuzz_settings
from tests.fuzz.strategies import add_arguments
from tests.fuzz.test_api import CREATED, add_and_check


@fuzz_settings(scale=0.3)
@given(created=CREATED, arguments=add_arguments())
def test_postgresql_refuses_with_the_standard_error_or_stores_a_usable_row(
    postgres_store: Store, created: datetime, arguments: dict[str, Any]
) -> None:
    add_and_check(postgres_store, created, arguments)
