"""What leaves the service: the owner's webhook endpoint and its targets, a key's subscriptions,
time triggers, invitation mail and its replies. May import: platform, access, journal,
calendar, governance, interop. ``webhooks/`` (beside this package) sends what it queues.

- ``webhook_targets``: which URLs and addresses a webhook may go to;
- ``webhook_settings``: the owner's webhook endpoint, its secret and its state;
- ``subscriptions``: a key's webhook subscriptions;
- ``deliveries``: the webhook delivery state machine (claims, leases, attempts, retries), which
  ``webhooks/`` drives;
- ``triggers/``: time triggers (an event starting, ending, minutes before);
- ``mail/``: invitation mail sent and its replies received;
- ``connections``: connected calendars (sources read from outside servers under the same SSRF
  rules): added, listed, removed, claimed for a poll, what a poll found recorded;
- ``connection_mirror``: a connected calendar shown in full (``visibility: details``): its
  read-only mirror calendar and the events the poller writes there;
- ``connection_removals``: a mirror's removal (busy again, or the connection removed) hidden at
  once and deleted in steps by a job the poller runs.
"""
