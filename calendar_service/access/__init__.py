"""Who asks and how often: owners, their sessions and sign-in, API keys, OAuth, rate limits, call
history, idempotency records. May import: platform.

- ``owners``: the people whose calendars these are (``calendar.calendars.create_owner`` adds
  one with a default calendar);
- ``owner_sessions``: signed-in browsers' server-side sessions;
- ``signin``: an owner signing in, repeated failures throttled;
- ``keys``: API keys issued, verified and revoked; ``Principal``, who a call acts for;
- ``oauth``: OAuth 2.1 storage for remote MCP (clients, codes, tokens, grants);
- ``ratelimit``: per-key request budgets across every process and host;
- ``call_history``: one row per request that presented an existing key;
- ``idempotency``: ``Idempotency-Key`` records for event creation.
"""
