"""``mail list``: the invitations the owner's events sent (to whom, their state, attempts);
``inbound-mail``: an iMIP reply handed over by a mail server's pipe (``< message.eml``)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from calendar_service.cli.common import JsonFlag, UserOption, emit, run, run_as
from calendar_service.platform.timeutil import utcnow

mail_app = typer.Typer(
    help="The invitations your events sent: list.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@mail_app.command("list")
def mail_list(
    user: UserOption,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 200,
    as_json: JsonFlag = False,
) -> None:
    """The owner's messages, newest first: recipient, method, status and attempts."""
    from calendar_service.delivery.mail import sending as outbox

    items = run_as(user, outbox.list_mail, limit=max(1, min(limit, 1000)))

    def text() -> None:
        for m in items:
            error = f"  ({m['lastError']})" if m["lastError"] else ""
            typer.echo(
                f"{m['createdAt']}  {m['id']}  {m['method']:<7}  {m['recipient']}  "
                f"{m['status']:<8}  {m['attempts']} attempts  {m['subject']}{error}"
            )

    emit({"messages": items}, as_json, text)


def inbound_mail(as_json: JsonFlag = False) -> None:
    """Apply an iMIP REPLY (an attendee's answer) read from standard input, as a mail server
    pipes it (at most 10 MB)."""
    from calendar_service.delivery.mail import replies

    raw = sys.stdin.buffer.read(replies.MAX_INBOUND_BYTES + 1)
    result: dict[str, Any] = run(replies.apply_inbound, raw=raw, now=utcnow())
    said = {
        replies.RECORDED: "recorded",
        replies.UNCHANGED: "recorded (it already was)",
        replies.OLDER: "ignored: older than the reply last recorded, which stands",
    }[result["outcome"]]
    emit(
        result,
        as_json,
        f"{said}: {result['email']} {result['responseStatus']} for {result['eventId']}",
    )
