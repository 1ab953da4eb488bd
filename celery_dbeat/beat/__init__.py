"""The beat: the Celery scheduler adapter (:mod:`.scheduler`), the tick algorithm (:mod:`.ticker`),
change notifications that wake beats (:mod:`.notify`), the worker hook that records runs
(:mod:`.worker`) and Prometheus metrics (:mod:`.metrics`)."""
