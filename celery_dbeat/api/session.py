"""What every write of the management API shares, whatever it writes (a schedule, a calendar, a
backfill, an import): one transaction, the time it happens (the database server's clock), who
makes it (the audit trail's actor), the checks a definition passes before it is stored, the
warning about a task the app does not register, and one wake-up of the running beats after it
commits. :class:`~celery_dbeat.api.Schedules` is a session; its
:attr:`~celery_dbeat.api.Schedules.calendars` write through the same one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, TypeVar

from celery.utils.log import get_logger
from sqlalchemy.engine import Connection, Engine

from ..clock import Clock, SystemClock
from ..core.audit import Action, Actor
from ..core.definitions import Definition
from ..core.validation import check_accepted
from ..notify import ChangeNotifier, DatabaseNotifier, notifies_through_database
from ..store import Store, audit
from ..task_names import check_slot_parameters, warn_unknown_tasks

__all__ = ["LIVE_WITHIN", "Session", "Write"]

#: The API's logger, whatever module of it logs.
logger = get_logger("celery_dbeat.api")

#: Set while a surface that tells its user about unknown task names itself writes
#: (:meth:`Session.quiet_about_unknown_tasks`), so that it is said once.
_TOLD_BY_CALLER: ContextVar[bool] = ContextVar("dbeat_unknown_tasks_told", default=False)

#: A beat is live while its heartbeat is younger than three of its ticks at the longest (beat
#: writes it every ``dbeat_max_interval``, 5 s by default).
LIVE_WITHIN = timedelta(seconds=15)

_S = TypeVar("_S", bound="Session")


class Write:
    """One write in progress: its connection (in its transaction), who makes it, and when it
    happens (read when first asked for: after the rows the write locks, not before)."""

    def __init__(self, session: Session, conn: Connection, actor: Actor) -> None:
        self.conn, self.actor, self._session = conn, actor, session

    @cached_property
    def now(self) -> datetime:
        return self._session.now(self.conn)

    def watch(self, name: str, action: Action) -> AbstractContextManager[audit.Watch]:
        """Record in the audit trail what the ``with`` block does to the schedule ``name``
        (:func:`celery_dbeat.store.audit.watch`)."""
        return audit.watch(self.conn, name, self.actor, action, self.now)


class Session:
    """The management API's connection to one schedule database. Accepts an ``Engine``, a URL
    or a ``Store``; closes only what it created."""

    def __init__(
        self,
        target: Engine | str | Store,
        *,
        clock: Clock | None = None,
        notify: Any = None,
        redis_key_prefix: str = "dbeat:",
        redis_options: Mapping[str, Any] | None = None,
        live_within: timedelta = LIVE_WITHIN,
        accept_content: Collection[str] | None = None,
        actor: Actor | str | None = None,
        app: Any = None,
    ) -> None:
        """``notify``: a Redis URL or client; after each write, running beats are woken through
        it (give the beats' ``dbeat_redis_url``, ``dbeat_redis_key_prefix`` and
        ``dbeat_redis_options``). Without it, on PostgreSQL through psycopg, writes ``NOTIFY``
        the beats that run without Redis. ``live_within``: how young a heartbeat must be for
        its beat to count as running (``live_beats``); three of the beats'
        ``dbeat_max_interval``. ``accept_content``: the workers' (the app's setting); ``None``,
        Celery's default, ``["json"]``: a schedule's ``serializer`` must be among them.
        ``actor``: who the writes are recorded as in the audit trail (``audit``), unless a
        write names its own: an :class:`Actor` (a name and a surface), or a name (surface
        ``api``); default, this process's OS user through the ``api``. ``app``: the Celery app
        whose registered task names a write checks (its task modules imported first, once, as a
        worker does): a task it does not register is stored all the same, with a warning logged
        (``celery_dbeat.api``); ``Schedules.from_app`` gives it."""
        if isinstance(target, Store):
            self.store, self._owns = target, False
        else:
            self.store, self._owns = Store(target), True
        self.clock = clock or SystemClock()
        self.live_within = live_within
        self.actor = self.who(actor, Actor(audit.os_user()))
        self.accept_content = None if accept_content is None else tuple(accept_content)
        self.app = app
        self.notifier: ChangeNotifier | DatabaseNotifier | None = None
        if notify is not None:
            self.notifier = ChangeNotifier(notify, prefix=redis_key_prefix, options=redis_options)
        elif notifies_through_database(self.store.engine):
            self.notifier = DatabaseNotifier(self.store.engine)

    def close(self) -> None:
        """Close the change notifier and, when this object made it, the store's engine."""
        if self.notifier is not None:
            self.notifier.close()
        if self._owns:
            self.store.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def who(self, actor: Actor | str | None, default: Actor | None = None) -> Actor:
        """Who a write is recorded as: ``actor``, a name through the default's surface, or
        the default (this session's ``actor``)."""
        default = default or self.actor
        if actor is None:
            return default
        return actor if isinstance(actor, Actor) else Actor(actor, default.surface)

    @contextmanager
    def write(self, actor: Actor | str | None = None) -> Iterator[Write]:
        """One write: a transaction, committed when the block ends (rolled back if it raises),
        then one wake-up of the running beats. Its time is this host's clock (a
        :class:`SystemClock`) given way to the database server's, which every host shares; any
        other ``clock`` (a :class:`FixedClock` in tests) is used as given."""
        who = self.who(actor)
        with self.store.engine.begin() as conn:
            yield Write(self, conn, who)
        if self.notifier is not None:
            self.notifier.notify()

    def now(self, conn: Connection) -> datetime:
        """The time of a write or a read on ``conn`` (see :meth:`write`)."""
        now = self.clock.now()
        return self.store.clock.now(conn, now) if isinstance(self.clock, SystemClock) else now

    def check(self, definition: Definition) -> Definition:
        """Refuse (:class:`ValidationError`) what this API does not store although it is valid
        on its own: a ``serializer`` the workers' ``accept_content`` would refuse; with an
        :attr:`app`, slot arguments its registered task cannot take
        (:func:`~celery_dbeat.task_names.check_slot_parameters`). Every write
        calls it; call it to check a batch before writing any of it. Returns ``definition``."""
        check_accepted(definition.options, self.accept_content)
        if self.app is not None:
            check_slot_parameters(self.app, definition)
        return definition

    @contextmanager
    def quiet_about_unknown_tasks(self) -> Iterator[None]:
        """Within it, in this thread, writes log nothing about a task the app does not register:
        for a surface that tells its user itself (the CLI's ``warning:`` line and reports, an
        admin's message), so that each surface says it once."""
        token = _TOLD_BY_CALLER.set(True)
        try:
            yield
        finally:
            _TOLD_BY_CALLER.reset(token)

    def warn_unknown_tasks(self, definitions: Iterable[Definition]) -> None:
        """Log the warning about the tasks of ``definitions`` that :attr:`app` does not register
        (nothing without an app, or inside :meth:`quiet_about_unknown_tasks`)."""
        if self.app is not None and not _TOLD_BY_CALLER.get():
            warn_unknown_tasks(self.app, definitions, log=logger, source="")
