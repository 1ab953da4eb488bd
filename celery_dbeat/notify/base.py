"""The change-notification interface: a writer's :class:`Notifier`, a beat's :class:`Listener`.

A notification says only "something changed": it carries no data and makes a beat reload
nothing. It ends the beat's wait between ticks early, and the next tick's ordinary due query sees
the change. It is a fast path, never a guarantee: a lost notification costs latency (a beat polls
every ``dbeat_max_interval`` all the same), never a fire.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["RETRY_AFTER", "Listener", "Notifier"]

#: Seconds a notifier or listener leaves its service alone after a failure before trying again.
RETRY_AFTER = 30.0


class Notifier(Protocol):
    """A writer's side: wakes every beat listening on the same service. Building one with a
    configuration the backend refuses (a bad Redis URL) raises
    :class:`~celery_dbeat.core.errors.ConfigurationError`; a service that is down never does."""

    def notify(self) -> None:
        """Tell every listening beat that something changed. A writer calls it after its
        transaction commits (the management API after each write), so that the beats it wakes
        read the change.

        Never raises. While the service is down the notification is dropped (logged at DEBUG),
        and after a failure nothing is sent for :data:`RETRY_AFTER` seconds, so that writes are
        not slowed by a connection timeout each.
        """

    def close(self) -> None:
        """Release the connections this notifier created (a client it was handed stays open)."""


class Listener(Protocol):
    """A beat's side: its sleep between ticks, ended early by a notification."""

    def listen(self) -> bool:
        """Subscribe, if not yet subscribed, and return whether this listener is. Beat calls it
        before each tick reads the schedules: a change committed after that read is then
        delivered to the wait that follows the tick, not lost until the next poll. Never
        raises."""

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; return True if woken early by a notification.

        A burst is one wake-up: the notifications that arrive with the first are consumed with
        it, so 10,000 edits cost a beat one early tick. Never raises. While the service is down
        it sleeps the whole ``timeout`` and returns False (the beat polls), trying again every
        :data:`RETRY_AFTER` seconds; the outage is logged once as a warning ("unavailable") and
        its end once ("resumed"). Closed by another thread while it waits (beat's SIGTERM
        handler), it returns False and logs nothing.
        """

    def close(self) -> None:
        """Stop listening and release this listener's connections; safe while another thread
        waits."""
