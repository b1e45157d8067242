"""CalDAV (RFC 4791, RFC 6578 sync, RFC 6764 discovery) for the owner's calendar apps: the
protocol's core, without HTTP (``dav.routes`` serves it), every read and write through the
same core functions as REST and MCP (``operations``: ``CALDAV_*``, run by
``gateway.perform``).

- ``names``: the WebDAV and CalDAV names (Clark notation) and the ``multistatus`` answers as
  plain values; ``asked``: what a request asks (a PROPFIND's properties, a report's filter),
  as plain values (parsing XML, reading what it asks and writing the answers is the
  front's: ``dav.documents``, ``dav.asking``, ``dav.multistatus``);
- ``access``: HTTP Basic sign-in with the owner's email and an app password, throttled as
  the sign-in page is;
- ``objects``: one calendar object per event (a series with its exceptions): names, ETags,
  text (``ical.export``), expanded occurrences;
- ``resources``: the paths (principal, calendar home, calendars, objects), their properties,
  ``PROPFIND``, ``GET``, ``PROPPATCH``;
- ``reports``: ``calendar-query``, ``calendar-multiget``, ``sync-collection``;
- ``writing``: ``PUT`` (an import of one object: ``ical.importing``) and ``DELETE``, with
  their preconditions; ``MKCALENDAR`` and a calendar's ``DELETE`` (``calendars``,
  ``calendar_changes``).
"""
