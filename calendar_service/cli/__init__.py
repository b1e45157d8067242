"""The assembly: the ``calendar-service`` command, which runs the service and manages owners,
calendars, keys, webhooks and the change log, and the ASGI application it serves. It may
import everything of ours; nothing imports it.

Every command brings the schema up to date first. Commands that print data accept ``--json``
and then print exactly one JSON object. A core error or a command line refused, from any
command, is translated into a message (with ``--json``, one JSON object: ``code``, ``message``
…) and an exit code in one place, the app's group (``common.Commands``).

    asgi_app.py the ASGI application ``serve`` runs: ``create_app(config)``, every front mounted
    common.py   the database, printing, the one error translation
    serve.py    serve, migrate, mcp
    owners.py   users, calendars, keys, calls
    webhook.py  webhook …, worker
    ical.py     feeds …, import
    connections.py connections add-ics, add-caldav, list, sync, remove
    changes.py  changes list, changes undo
    proposals.py proposals list, approve, reject (writes that wait for the owner)
    rules.py    rules show, rules set (the owner's rules for agents)
    mail.py     mail list (the invitations sent), inbound-mail (an iMIP reply on stdin)
    demo.py     demo
"""

from __future__ import annotations

import typer

from calendar_service.cli import (
    changes,
    connections,
    demo,
    ical,
    mail,
    owners,
    proposals,
    rules,
    serve,
    webhook,
)
from calendar_service.cli.common import Commands

app = typer.Typer(
    name="calendar-service",
    help="A calendar service for machines: REST and MCP, scoped keys, signed webhooks.",
    cls=Commands,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
# rich_markup_mode=None: click's plain help. Typer's rich help shows a flag as ``--json <bool>``,
# as if it took a value.
app.add_typer(owners.users_app, name="users")
app.add_typer(owners.calendars_app, name="calendars")
app.add_typer(owners.keys_app, name="keys")
app.add_typer(webhook.webhook_app, name="webhook")
app.add_typer(ical.feeds_app, name="feeds")
app.add_typer(changes.changes_app, name="changes")
app.add_typer(proposals.proposals_app, name="proposals")
app.add_typer(rules.rules_app, name="rules")
app.add_typer(mail.mail_app, name="mail")
app.add_typer(connections.connections_app, name="connections")
app.command()(serve.serve)
app.command()(webhook.worker)
app.command()(serve.migrate)
app.command()(serve.mcp)
app.command()(owners.calls)
app.command("import")(ical.import_file)
app.command("inbound-mail")(mail.inbound_mail)
app.command()(demo.demo)


def main() -> None:
    """The ``calendar-service`` console script."""
    app()
