"""Email invitations (iMIP, RFC 6047): what a change tells its attendees, the outbox it goes
through, and the replies that come back.

- ``table``: the ``mail_outbox`` table, one message to one recipient for one change;
- ``invitations``: who may send (``sendUpdates=all``), what each change sends to whom, queued
  in the change's transaction;
- ``links``: signed accept / tentative / decline links;
- ``messages``: a message made of an outbox row (``multipart/mixed``: plain, HTML,
  ``text/calendar``, the ``.ics``);
- ``outbox``: claiming and recording sends (the worker's side), the owner's list;
- ``replies``: a reply (a link, or an iMIP ``REPLY`` message) sets an attendee's response.
"""
