"""The notes left on a connection's ``info``: every key, named once, with who sets and reads it.

``Connection.info`` is a dict SQLAlchemy keeps with the driver's connection (it survives a
return to the pool). The database layer and the core use it to pass word along a transaction
without threading an argument through every function that runs in it; each key below is the
only spelling of its name, imported by the modules that set or read it.
"""

from __future__ import annotations

OPEN_GROUP = "commit_group"
"""The ``transactions.Group`` whose write transaction is open on the connection (SQLite group
commit).

Set by ``Database.run_grouped`` when it opens the group; removed when the group commits or is
abandoned (``Group.abandon``). ``atomic`` joins the group it finds here instead of opening a
transaction; ``Database`` commits it before any other work on the connection; the kept
connection is never given back to the pool while it is set."""

OUTBOX_DIRTY = "outbox_dirty"
"""True when the transaction queued a webhook delivery (``outbox.notify_committed``).

``Database`` pops it after the commit and calls ``Database.on_outbox_commit`` (the
dispatcher's wake-up); a transaction that rolls back pops it unread. A flag left over by a
rollback costs the dispatcher one spurious look, never a lost delivery."""
