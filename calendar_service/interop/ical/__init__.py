"""iCalendar (RFC 5545) interop: subscription feeds out, ``.ics`` files in.

- ``feeds``: the owner's feeds of a calendar (``/ical/<token>.ics``), found by their secret
  token, each fetch recorded in the feed's history;
- ``export``: a calendar as iCalendar text (series as RRULE/EXDATE, changed occurrences with
  RECURRENCE-ID), for the feed and CalDAV's objects;
- ``people``: an event's ORGANIZER and ATTENDEE properties (feeds, objects, invitations);
- ``text``: a single event's VEVENT written as text, the same bytes ``export`` writes with
  the ``icalendar`` package, without building its objects (CalDAV's reports);
- ``reading``: an ``.ics`` file read with the ``icalendar`` package into what the calendar can
  hold, per UID, with what does not fit said;
- ``desired``: what each UID of such a file wants the calendar to hold, checked as the core
  checks it before anything is written (with what is imported only in part said);
- ``importing``: those written through the events core (outbox included), idempotent by UID;
- ``connected``: a connected calendar's text read into busy intervals, bounded as an import;
- ``zones``: a file's TZIDs resolved to IANA zones, or its own VTIMEZONEs read with bounded
  work (never a rule from the file walked without a bound);
- ``edges``: occurrences next to a DST change written so that every reader reads them alike.

The core's part: no HTTP here (``rest.feed`` serves the feed, ``rest.routes`` the import).
"""
