"""The celery-dbeat benchmark suite: real beats, a real broker and database (see README.md)."""
