"""Fault-injection fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services import private_database


@pytest.fixture(params=["postgresql", "mysql"])
def server_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A private database on each server backend (the faults are cut between beat and server)."""
    with private_database(request.param, tmp_path_factory) as url:
        yield url
