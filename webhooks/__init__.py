"""Signed webhooks, delivered from the outbox, and the worker's other scheduled jobs (mail,
time triggers, housekeeping). A front: it imports the core only.

    signing.py     the x-<service>-signature and Standard Webhooks headers
    guard.py       the SSRF guard at send time: the core's target rules, connections pinned
    http11.py      the webhook client: lean HTTP/1.1 POSTs, kept alive per receiver, pinned
    transport.py   the clients: the webhook client, and httpx pinned by the guard (documents)
    sender.py      one attempt over the shared webhook client
    documents.py   fetching a document from an outsider's URL through the same guard (OAuth)
    dispatcher.py  claim, send concurrently, record (the core's ``delivery.deliveries``); woken
                   on commit
    listener.py    woken by commits on other processes and hosts (PostgreSQL LISTEN/NOTIFY)
    triggers.py    the time triggers' job: plan, then fire what fell due (the core's work)
    mail.py        the mail outbox's job: invitations sent over SMTP (smtplib, on a thread)
    connections.py the connected calendars' poller (ics, CalDAV) and CalDAV discovery
    caldav_client.py CalDAV as a client speaks it: request bodies, multistatus answers read
    scheduler.py   the APScheduler jobs run by ``serve`` and by ``calendar-service worker``
    housekeeping.py the hourly housekeeping job beside them: the core's retention purges

The core (``calendar_service.journal.webhook_outbox``) writes a delivery row in the same transaction
as each change; this package is the only code that sends anything.
"""
