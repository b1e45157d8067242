"""Email invitations (iMIP, RFC 6047) leaving and their replies coming back. What a change
queues in its own transaction (the queue, the invitations, the reply links) is ``journal``'s.

- ``messages``: a message made of a queued row (``multipart/mixed``: plain, HTML,
  ``text/calendar``, the ``.ics``);
- ``sending``: claiming and recording sends (the worker's side), the owner's list;
- ``replies``: a reply (a link, or an iMIP ``REPLY`` message) sets an attendee's response.
"""
