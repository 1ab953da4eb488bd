"""The beat: the Celery scheduler adapter (:mod:`.scheduler`), the tick algorithm (:mod:`.ticker`),
the worker hook that records runs (:mod:`.worker`) and Prometheus metrics (:mod:`.metrics`).
Writes wake beats through :mod:`celery_dbeat.notify`."""
