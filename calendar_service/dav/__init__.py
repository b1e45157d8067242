"""The CalDAV protocol front: ``/.well-known/caldav`` and ``/caldav/`` over HTTP (``routes``).
May import: the core, asgi.

- ``routes``: the handlers, each through ``gateway.perform`` (the resources are
  ``interop.caldav``'s);
- ``documents``: request bodies parsed with ``defusedxml`` within bounds, and the
  ``DAV:error`` body of a refusal;
- ``asking``: what a document asks (a PROPFIND's properties, a report's kind and filter, a
  MKCALENDAR's settings), read into the core's plain values (``interop.caldav.asked``);
- ``multistatus``: the core's answers (``interop.caldav.names``) written as XML text.
"""
