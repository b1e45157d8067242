"""The time triggers' tests run on a database of their own that no delivery job watches."""

from tests.webhooks.conftest import quiet_db  # noqa: F401  (the fixture, used here too)
