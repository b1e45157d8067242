"""``demo``: a demo owner and a fresh key for it, for trying the service out."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

import typer

from calendar_service.cli.common import JsonFlag, emit, run
from calendar_service.cli.serve import base_url_for
from calendar_service.platform.errors import CalendarError
from calendar_service.platform.timeutil import format_utc, utcnow

DEMO_PASSWORD = "demo-password"  # noqa: S105 - printed for the local demo owner only
DEMO_KEY_NAME = "demo key"  # each ``demo`` run revokes the active keys so named


def demo(
    email: Annotated[str, typer.Option(help="Demo owner email.")] = "demo@example.com",
    host: Annotated[str, typer.Option(help="The address serve will listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port serve will listen on.")] = 8000,
    as_json: JsonFlag = False,
) -> None:
    """Make sure a demo owner exists and print a fresh read-and-write key for it.

    Secrets are stored hashed, so an earlier demo key cannot be printed again: each run revokes
    the owner's earlier demo keys (named "demo key …") and issues a new one, so that one demo
    key at most is live. The owner's other keys are left alone."""
    from calendar_service.access import keys
    from calendar_service.access import owners as users
    from calendar_service.calendar import calendars

    now = utcnow()

    def work(conn: Any) -> dict[str, Any]:
        try:
            owner = users.get_user_by_email(conn, email=email)
            user_id = owner["id"]
        except CalendarError:
            user_id = calendars.create_owner(conn, email=email, password=DEMO_PASSWORD, now=now)[
                "id"
            ]
        earlier = [
            k["id"]
            for k in keys.list_keys(conn, user_id=user_id, now=now)
            if k["state"] == "active" and k["name"].startswith(DEMO_KEY_NAME)
        ]
        for key_id in earlier:
            keys.revoke_key(conn, user_id=user_id, key_id=key_id, now=now)
        record, secret = keys.create_key(
            conn,
            user_id=user_id,
            name=f"{DEMO_KEY_NAME} {format_utc(now)}",
            permission=keys.WRITE,
            expires_at=now + timedelta(days=30),
            calendar_id=None,
            now=now,
        )
        return {
            "email": email,
            "password": DEMO_PASSWORD,
            "key": record,
            "secret": secret,
            "revokedKeys": earlier,
        }

    data = run(work)
    base = base_url_for(host, port)  # what `serve --host HOST --port PORT` will answer on

    def text() -> None:
        typer.echo(
            f"demo owner: {data['email']} (password: {data['password']}, "
            f"settings at {base}/settings)"
        )
        if data["revokedKeys"]:
            count = len(data["revokedKeys"])
            typer.echo(f"revoked {count} earlier demo key{'' if count == 1 else 's'}")
        typer.echo(f"demo key (read and write, 30 days): {data['secret']}")
        typer.echo(
            f"try: curl -H 'Authorization: Bearer {data['secret']}' {base}/api/v1/calendar/events"
        )

    emit(data, as_json, text)
