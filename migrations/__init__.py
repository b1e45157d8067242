"""The schema's history: Alembic migrations, frozen.

    versions/    one revision a file, ``0001_initial_schema.py`` on
    _frozen.py   what they need of the models, copied as it was (``UTCDateTime``'s DDL)
    env.py       Alembic's environment: batch mode for SQLite's ALTER TABLE limits

A migration imports nothing of the live code (``tests/core/test_layering.py`` checks), so
editing a model never changes an old migration. ``calendar_service.platform.migrate`` runs them.
"""
