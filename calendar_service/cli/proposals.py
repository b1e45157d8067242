"""``proposals list|approve|reject``: the writes that wait for the owner's approval (keys made
with ``--approval destructive`` or ``all``), decided by the owner in person.

An approval makes the change the key asked for, if the event is still as it was when the key
asked (else the proposal is ``failed``: the command prints why and exits 1); the change's actor
is the key, its transport ``cli``, ``approvedBy`` the owner.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from calendar_service.cli.common import JsonFlag, UserOption, emit, owner_id, run
from calendar_service.cli.owners import check_key_id
from calendar_service.platform.errors import FieldError, NotFound, ValidationFailed
from calendar_service.platform.timeutil import utcnow

proposals_app = typer.Typer(
    help="Writes that wait for your approval: list, approve, reject.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

ProposalArgument = Annotated[str, typer.Argument(help="The proposal's id (prop_…).")]
OwnerOption = Annotated[
    str | None, typer.Option("--user", help="Owner email: refuse a proposal of anyone else.")
]


def _line(proposal: dict[str, Any]) -> str:
    actor = proposal["actor"]
    title = (proposal["after"] or proposal["before"] or {}).get("title", "")
    return (
        f"{proposal['createdAt']}  {proposal['id']}  {proposal['status']:<8}  "
        f"{proposal['kind']:<7}  {proposal['eventId']}  {title!r}  by {actor['type']} "
        f"{actor['name']} ({proposal['transport']}), expires {proposal['expiresAt']}"
    )


@proposals_app.command("list")
def proposals_list(
    user: UserOption,
    status: Annotated[
        str | None,
        typer.Option(help="Only these: pending, approved, rejected, expired or failed."),
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", help="Only this key's (key_…) or app's.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The owner's proposals, newest first."""
    from calendar_service.access.keys import get_key
    from calendar_service.governance import proposals

    key = None if key is None else check_key_id(key)
    if status is not None and status not in proposals.STATUSES:
        raise ValidationFailed(
            [FieldError("status", f"must be one of {', '.join(proposals.STATUSES)}")]
        )

    def work(conn: Any) -> dict[str, Any]:
        owner = owner_id(conn, user)
        if key is not None:
            get_key(conn, user_id=owner, key_id=key)  # 404: not theirs
        return proposals.list_proposals(
            conn, user_id=owner, now=utcnow(), status=status, key_id=key
        )

    found = run(work)

    def text() -> None:
        if not found["proposals"]:
            typer.echo("no proposals")
        for proposal in found["proposals"]:
            typer.echo(_line(proposal))

    emit(found, as_json, text)


def _owner(conn: Any, user: str | None, proposal_id: str) -> str:
    from calendar_service.governance import proposals

    if user is None:
        return proposals.owner_of(conn, proposal_id=proposal_id)
    owner = owner_id(conn, user)
    try:
        if proposals.owner_of(conn, proposal_id=proposal_id) == owner:
            return owner
    except NotFound:
        pass
    raise NotFound(f"{user} has no proposal {proposal_id!r}; 'proposals list --user {user}'.")


@proposals_app.command("approve")
def proposals_approve(
    proposal_id: ProposalArgument, user: OwnerOption = None, as_json: JsonFlag = False
) -> None:
    """Approve a pending proposal: the change is made now, if the event is still as it was
    (else it fails: exit 1)."""
    from calendar_service.governance import proposals
    from calendar_service.governance.approving import approve

    def work(conn: Any) -> dict[str, Any]:
        owner = _owner(conn, user, proposal_id)
        return approve(conn, user_id=owner, proposal_id=proposal_id, now=utcnow(), transport="cli")

    done = run(work)
    if done["status"] == proposals.FAILED:
        emit(done, as_json, f"{proposal_id} failed: {done['reason']}")
        raise typer.Exit(1)
    emit(done, as_json, f"approved {proposal_id}: made {', '.join(done['changeIds'])}")


@proposals_app.command("reject")
def proposals_reject(
    proposal_id: ProposalArgument, user: OwnerOption = None, as_json: JsonFlag = False
) -> None:
    """Reject a pending proposal: nothing is changed."""
    from calendar_service.governance import proposals

    def work(conn: Any) -> dict[str, Any]:
        owner = _owner(conn, user, proposal_id)
        return proposals.reject(
            conn, user_id=owner, proposal_id=proposal_id, now=utcnow(), transport="cli"
        )

    done = run(work)
    emit(done, as_json, f"rejected {proposal_id}")
