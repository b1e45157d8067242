"""Time triggers: ``calendar.event.starting`` (minutes before each event and occurrence starts)
and ``calendar.event.ended``, fired once each through the webhook outbox.

    kinds.py        the webhook event types, and what an endpoint asks for (types, offsets)
    tables.py       the plan (indexed by due time), the planner's place, each owner's offsets
    occurrences.py  the occurrences starting in a stretch of time (series expanded, bounded)
    planner.py      the plan, a horizon ahead, kept up to date from the change feed
    firing.py       what fell due, claimed once and fanned out into the outbox

The core plans and fires; ``webhooks.triggers`` runs it on a schedule. docs/webhooks.md
("Time triggers") tells the whole story.
"""
