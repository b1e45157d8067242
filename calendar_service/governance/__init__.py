"""The change log as its readers and deciders see it: the list, dry runs, proposals, undo,
approvals, undo jobs. May import: platform, access, journal, calendar. What a write records in
its own transaction (the ``changes`` table, ``Via``, ``Unit``) is ``journal``'s.

- ``change_list``: the list, newest first, and one change by id, as the API shows them;
- ``dry_run``: what a dry run answers: the change a write would have made;
- ``change_shapes``: the public shapes the OpenAPI document and the MCP tools share;
- ``proposals``: writes that wait for the owner's approval (keys' ``approval``): whether one
  waits, the proposal kept instead, reading, rejecting and expiring them;
- ``undo``: undoing a change (putting back the rows it touched), one or a key's since a time;
- ``undo_jobs``: undoing a key's work as a job kept in the database, a batch at a time;
- ``undo_runner``: ``UndoJobs``, running those jobs in the background of a process;
- ``approving``: the owner approves a proposal (a write that waited): it is made as proposed;
- ``restoring``: what both do once decided: rows put back, their webhook, the event shown.
"""
