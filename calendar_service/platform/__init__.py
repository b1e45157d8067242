"""The ground floor: errors, configuration, time, ids, logging, untrusted input, the database and
the tables. May import: nothing of ours (and ``migrations`` for the schema upgrade).

- ``errors``: one error tree for the whole service (``CalendarError`` and its kinds);
- ``config``: typed configuration, built once from the environment;
- ``timeutil``: date-times parsed and formatted (RFC 3339 out, ISO 8601 in), IANA zones;
- ``ids``: identifiers, a type prefix and a time-ordered base62 tail;
- ``logs``: the service's logging, one configuration for every entry point;
- ``deferred``: ``Later``, CPU work of an operation deferred past its transaction (``finish``);
- ``emails``: the one rule for an email address (owners, attendees, shares, imports);
- ``inputs``: untrusted JSON turned into the public input models, every bad field named;
- ``schema_patterns``: what the core accepts, as the patterns and limits its schemas publish;
- ``lru``: a bounded, thread-safe LRU (what the list keeps between requests);
- ``service_secrets``: secrets the service makes for itself and keeps in the database;
- ``sealed``: secrets it must use again but never show, sealed with AES-GCM at rest;
- ``served_address``: the address the service is served on, for commands that print links;
- ``migrate``: the schema brought up to date with Alembic;
- ``db/``: the engine, transactions, and running the core's calls for the fronts;
- ``models/``: the tables and the public shapes.
"""
