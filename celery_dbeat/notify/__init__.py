"""Change notification: writes wake every running beat at once instead of at its next poll.

Writers (the management API and every surface built on it) notify after they commit; beats
listen between ticks (the contract: :mod:`.base`). Through Redis pub/sub when
``dbeat_redis_url`` is set (:mod:`.redis`), else, on PostgreSQL through psycopg, through
``NOTIFY``/``LISTEN`` on the schedule database itself (:mod:`.database`). Without either, or
while it is down, beats simply poll every ``dbeat_max_interval``.
"""

from __future__ import annotations

from .base import Listener, Notifier
from .database import PG_CHANNEL, DatabaseListener, DatabaseNotifier, notifies_through_database
from .redis import ChangeListener, ChangeNotifier, channel_name

__all__ = [
    "PG_CHANNEL",
    "ChangeListener",
    "ChangeNotifier",
    "DatabaseListener",
    "DatabaseNotifier",
    "Listener",
    "Notifier",
    "channel_name",
    "notifies_through_database",
]
