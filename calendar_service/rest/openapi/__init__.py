"""The OpenAPI 3.1.0 document, generated from the same pydantic models the handlers use.

The models give the shapes (fields, types, required, unknown fields refused). What the core
checks beyond types is added here, so that the document describes what the API really accepts:
the date-time syntax ``timeutil`` parses (offsets optional, dates for all-day events, the
accepted range), titles that are not blank, text without NUL, which fields ``PATCH`` lets be
``null``. What no schema can say (``endsAt`` not before ``startsAt``, a calendar that exists, a
page token from the same query) is in the descriptions. ``tests/rest/test_openapi.py`` checks
the document against the API; ``tests/rest/test_schemathesis.py`` fuzzes the API with it.

document.py      ``build_openapi`` assembles the parts; ``routes`` serve the document
events.py        the Events operations (list, create, get, update, delete) and their links
availability.py  the Availability operations (free/busy, free time), their schemas' checks
ical.py          the import operation, its query parameters and the report's schema
webhooks.py      the Webhooks operations (a key's subscriptions), and the deliveries' payloads
changes.py       the change log's operations (list, undo), the dry run, the change's header
links.py         the Scheduling links operations: the key's, and the public booking API
proposals.py     a write that waits for the owner (202, the proposal) and getProposal
rules.py         getSchedulingRules, the rules' schema, 409 rule_violation on the writes
read_only.py     409 read_only_calendar on the writes (a connected calendar shown in full)
schemas.py       the component schemas, from the models, named as the API names them
bodies.py        the Events bodies' schemas: what the core checks beyond types
parameters.py    the parameter components (which operation takes which: ``rest/parameters.py``)
headers.py       the response headers
responses.py     the error responses, as problem details, and the references to them
examples.py      the examples: a calendar, an event, problem details
refs.py          ``$ref`` builders, every answer's headers, the sentences operations share
"""

from calendar_service.rest.openapi.document import build_openapi, routes

__all__ = ["build_openapi", "routes"]
