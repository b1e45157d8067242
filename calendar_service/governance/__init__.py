"""The change log: every change to an event, whatever made it, as one row (``table``), written
in the change's own transaction (``record``), read within what the caller reaches
(``reading``). Undoing a change is an event write: ``events.undo``.

- ``table``: the ``changes`` table and the names it stores (kinds, actors, transports);
- ``record``: who makes a change (``Via``), the rows it touched (``Unit``), the row itself;
- ``reading``: the list, newest first, and one change by id, as the API shows them;
- ``dryrun``: what a dry run answers: the change a write would have made;
- ``shapes``: the public shapes the OpenAPI document and the MCP tools share;
- ``proposals``: writes that wait for the owner's approval (keys' ``approval``): whether one
  waits, the proposal kept instead, reading, rejecting and expiring them (approving one is an
  event write: ``events.approving``).
"""
