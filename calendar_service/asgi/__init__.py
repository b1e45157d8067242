"""ASGI plumbing shared by the HTTP fronts (REST, MCP over HTTP, the settings pages), not part
of the core: the services the app hands them, request ids, the bearer token, body limits and
problem+json responses (``context``, ``responses``), the last line of error handling
(``boundary``), the methods a path supports, for ``OPTIONS`` and 405s (``methods``), and the
base of the middleware that acts on HTTP requests only (``middleware``), and what the
scheduling links' public API and page share: a guest's budget and a guest's write
(``guests``).

Fronts import from here, never from each other."""
