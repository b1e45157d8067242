"""The REST front: thin Starlette handlers over the core's operations. It may import the core
and the plumbing (``asgi``), no other front.

routes.py      the ``/api/v1`` handlers, each through ``gateway.perform``
subscriptions.py  ``/api/v1/webhooks/subscriptions``: a key's webhook subscriptions
parameters.py  each operation's query parameters, declared once (routes and document)
errors.py      the one translation of ``CalendarError`` into RFC 9457 problems
feed.py        ``GET /ical/<token>.ics``, a calendar's subscription feed
invitations.py the reply links' page and ``POST /api/v1/inbound/mail`` (iMIP replies)
openapi/       the OpenAPI 3.1.0 document, from the handlers' own models, by part
"""
