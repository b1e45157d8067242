"""Calendars and events: reach, create, change, list, search, sync, recurrence, availability,
sharing, attendees. May import: platform, access, journal.

- ``calendars``: calendars, what a principal reaches, and ``create_owner`` (an owner with the
  default calendar);
- ``calendar_edits``: a calendar changed or deleted, with its change-log rows;
- ``availability``: free/busy and finding a free time;
- ``rules``: the owner's rules for agents, checked as sent, stored and read;
- ``rule_verdict``: the rules applied to times, without the database (a time's broken rules,
  whether it passes, what findFreeTime keeps of free time);
- ``rule_check``: the one check of a key's write against them, suggestions, findFreeTime's
  filter for a key;
- ``links``: scheduling links a key makes (create, list, delete; the owner's view);
- ``booking``: a guest's slots, booking, reschedule and cancel through a link;
- ``connected``: the owner's connected calendars as availability counts them (busy time,
  freshness);
- ``sharing``: an owner's calendars shared with other owners;
- ``reminders``: an event's reminders as sent, stored and shown;
- ``attendees``: attendees and organizer, as sent, stored and shown (one email rule);
- ``page_tokens``: signed page tokens;
- ``event_input``: list windows, limits, titles and times as callers send them;
- ``events/``: the events themselves (list, get, create, update, delete, search, sync);
- ``recurrence/``: recurrence rules, their expansion and occurrence ids.
"""
