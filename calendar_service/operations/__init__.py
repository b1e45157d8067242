"""Each operation's needs, checked once for every front (``catalog``, ``gateway``), and the
retention purges spanning every domain (``retention``). May import: the core.

- ``catalog``: each operation: its permission, scope, rate and what the history records;
- ``gateway``: ``perform``, one operation run for a front: key, permission, limits, history;
- ``retention``: ``purge_expired``, what each domain keeps no longer.
"""
