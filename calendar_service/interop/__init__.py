"""Other calendar formats: iCalendar feeds and imports (``ical/``), CalDAV resources
(``caldav/``; the HTTP protocol front is ``dav/``). May import: platform, access, journal,
calendar, governance (a CalDAV write that waits for the owner's approval).

- ``ical/``: iCalendar (RFC 5545) export, feeds and imports;
- ``caldav/``: CalDAV's resources, reports and writes, without HTTP.
"""
