"""``celery dbeat admin``'s login: which addresses count as this host's only, and the check of
a user and password against the configured hash."""

from __future__ import annotations

import pytest
from werkzeug.security import generate_password_hash

from celery_dbeat.cli.admin import is_loopback
from celery_dbeat.contrib.flask.standalone import Login

HASH = generate_password_hash("s3cret", method="pbkdf2:sha256:1000")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        pytest.param("127.0.0.1", True, id="ipv4-loopback"),
        pytest.param("127.8.9.10", True, id="ipv4-loopback-network"),
        pytest.param("::1", True, id="ipv6-loopback"),
        pytest.param("[::1]", True, id="ipv6-loopback-bracketed"),
        pytest.param("localhost", True, id="localhost"),
        pytest.param("0.0.0.0", False, id="every-ipv4-interface"),
        pytest.param("::", False, id="every-ipv6-interface"),
        pytest.param("", False, id="empty-is-every-interface"),
        pytest.param("192.168.1.5", False, id="private-address"),
        pytest.param("localhost.example.org", False, id="a-name-like-localhost"),
        pytest.param("myhost", False, id="a-host-name"),
    ],
)
def test_only_loopback_addresses_may_serve_without_a_login(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("user", "password", "accepted"),
    [
        pytest.param("ops", "s3cret", True, id="right"),
        pytest.param("ops", "s3cre", False, id="wrong-password"),
        pytest.param("ops", "", False, id="no-password"),
        pytest.param("Ops", "s3cret", False, id="user-case-matters"),
        pytest.param("other", "s3cret", False, id="wrong-user"),
        pytest.param("", "", False, id="nothing"),
    ],
)
def test_a_login_accepts_only_its_user_and_password(
    user: str, password: str, accepted: bool
) -> None:
    assert Login("ops", HASH).accepts(user, password) is accepted


def test_once_accepted_the_right_pair_still_refuses_any_other() -> None:
    login = Login("ops", HASH)
    assert login.accepts("ops", "s3cret")
    assert login.accepts("ops", "s3cret")  # from the remembered digest
    assert not login.accepts("ops", "wrong")
    assert not login.accepts("other", "s3cret")


def test_a_login_never_shows_its_hash() -> None:
    login = Login("ops", HASH)
    login.accepts("ops", "s3cret")
    assert HASH not in repr(login)
    assert "s3cret" not in repr(login)
