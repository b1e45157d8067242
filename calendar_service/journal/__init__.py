"""What a write records in its own transaction, beside its rows: its change-log row, its webhook
deliveries (the outbox), its invitation emails. May import: platform, access. Read and acted on
above: governance (the change log), delivery (webhooks, mail).

- ``change_table``: the ``changes`` table and the names it stores (kinds, actors, transports);
- ``change_record``: who makes a change (``Via``), the rows it touched (``Unit``), the row;
- ``webhook_outbox``: a change's webhook delivery rows, written in its transaction;
- ``mail_queue``: the ``mail_outbox`` table, one message to one recipient for one change;
- ``invitations``: who may send (``sendUpdates=all``), what each change sends to whom, queued
  in the change's transaction;
- ``reply_links``: signed accept / tentative / decline links.
"""
