"""The FireLock contract on every backend (database-only claims, Redis claims).

``locks/base.py``: ``claim`` returns the keys this process now holds and never raises for a
backend outage; ``release`` gives back only this owner's keys. ``SEMANTICS.md``: the per-fire
Redis lock (``SET key token NX PX ttl``) is the fast path; the guarantee must not depend on Redis
staying up. The database backend grants every key: the fire rows decide.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
import redis

from celery_dbeat.core.fires import FireKey, fire_lock_key
from celery_dbeat.locks.redis import RedisLock
from tests.integration.conftest import START, LockBackend

TTL = timedelta(seconds=30)
A = FireKey(1, START)
B = FireKey(2, START)
A_LATER = FireKey(1, START + timedelta(microseconds=1))
KEYS = [A, B, A_LATER]


def test_claim_returns_every_free_key(lock_backend: LockBackend) -> None:
    lock = lock_backend.make("beat-1")

    assert lock.claim(KEYS, TTL) == set(KEYS)
    assert lock.claim([], TTL) == set()


def test_a_second_owner_cannot_claim_a_held_key(lock_backend: LockBackend) -> None:
    first, second = lock_backend.make("beat-1"), lock_backend.make("beat-2")
    assert first.claim([A], TTL) == {A}

    won = second.claim(KEYS, TTL)

    if lock_backend.exclusive:
        assert won == {B, A_LATER}
    else:  # database-only claims: both beats go on, the fire row's unique key decides
        assert won == set(KEYS)


def test_release_gives_back_only_the_owners_own_keys(lock_backend: LockBackend) -> None:
    first, second, third = (lock_backend.make(f"beat-{n}") for n in (1, 2, 3))
    assert first.claim([A], TTL) == {A}

    second.release([A])  # not second's key: left alone
    still_held = third.claim([A], TTL)
    first.release([A])
    after_release = third.claim([A], TTL)

    assert still_held == (set() if lock_backend.exclusive else {A})
    assert after_release == {A}


def test_release_of_keys_never_claimed_is_harmless(lock_backend: LockBackend) -> None:
    lock = lock_backend.make("beat-1")
    lock.release([])
    lock.release(KEYS)
    assert lock.claim(KEYS, TTL) == set(KEYS)


def test_a_claim_expires_after_its_ttl(lock_backend: LockBackend) -> None:
    first, second = lock_backend.make("beat-1"), lock_backend.make("beat-2")
    assert first.claim([A], timedelta(milliseconds=300)) == {A}
    assert second.claim([A], TTL) == (set() if lock_backend.exclusive else {A})

    # Redis expires keys in real time: poll, bounded, instead of sleeping a fixed time.
    deadline = time.monotonic() + 10
    while second.claim([A], TTL) != {A}:
        assert time.monotonic() < deadline, "the key outlived its 300 ms ttl by 10 s"
        time.sleep(0.05)


def test_redis_keys_follow_the_documented_format(redis_url: str, redis_prefix: str) -> None:
    lock = RedisLock(redis_url, prefix=redis_prefix, owner="beat-1")
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        assert lock.claim([A, A_LATER], timedelta(seconds=20)) == {A, A_LATER}

        epoch_us = int(START.timestamp()) * 1_000_000
        assert fire_lock_key(redis_prefix, A) == f"{redis_prefix}fire:1:{epoch_us}"
        assert fire_lock_key(redis_prefix, A_LATER) == f"{redis_prefix}fire:1:{epoch_us + 1}"
        for key in (A, A_LATER):
            name = fire_lock_key(redis_prefix, key)
            assert client.get(name) == "beat-1"
            assert 0 < client.pttl(name) <= 20_000
        assert repr(redis_prefix) in lock.describe()
    finally:
        client.close()
        lock.close()


UNREACHABLE = "redis://:s3cret@127.0.0.1:1/0"


def test_redis_lock_degrades_to_granting_every_key_when_redis_is_unreachable(
    redis_prefix: str,
) -> None:
    lock = RedisLock(UNREACHABLE, prefix=redis_prefix, owner="beat-1")
    try:
        assert not lock.degraded

        started = time.monotonic()
        assert lock.claim(KEYS, TTL) == set(KEYS)
        assert lock.degraded
        lock.release(KEYS)
        assert lock.claim([A], TTL) == {A}  # within the retry backoff
        assert lock.claim([A], TTL) == {A}
        assert time.monotonic() - started < 5  # refused at once, no waiting on a dead server
        assert "s3cret" not in lock.describe()
        assert "127.0.0.1:1" in lock.describe()
    finally:
        lock.close()


@pytest.mark.parametrize("owner", ["beat-1", "host.example:4242"])
def test_a_lock_on_a_client_it_did_not_create_uses_that_client(
    redis_url: str, redis_prefix: str, owner: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    lock = RedisLock(client, prefix=redis_prefix, owner=owner)
    try:
        assert lock.claim([A], TTL) == {A}
        assert client.get(fire_lock_key(redis_prefix, A)) == owner.encode()
        lock.release([A])
        assert client.exists(fire_lock_key(redis_prefix, A)) == 0
        lock.close()
        assert client.ping()
    finally:
        client.close()
