"""ASGI plumbing shared by the HTTP fronts (REST, MCP over HTTP, the settings pages), not part
of the core: the services the app hands them, request ids, the bearer token, body limits and
problem+json responses (``context``, ``responses``), the last line of error handling
(``boundary``) and the methods a path supports, for ``OPTIONS`` and 405s (``methods``).

Fronts import from here, never from each other."""
