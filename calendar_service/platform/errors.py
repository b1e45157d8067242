"""One error tree for the whole service.

Every error a caller can cause is a ``CalendarError`` with a stable machine-readable ``code``,
an HTTP ``status`` and a message that is safe to show a stranger (and a model). The fronts
translate them in one place each: the REST exception handler (RFC 9457 problem details) and
the MCP tool wrapper (a tool error). Anything that is not a ``CalendarError`` is a bug and is
answered as an opaque 500.

    CalendarError
    ├── ConfigError                     (not an HTTP error: bad settings at start-up)
    ├── ValidationFailed        400     validation_error, with errors=[{field, message}]
    │   ├── InvalidICalendar    400     invalid_icalendar (an import that is not RFC 5545 text)
    │   └── UnknownParameter    400     unknown_parameter (a query parameter not taken)
    ├── BadRequest              400     bad_request (a caller mistake that is not a field)
    │   ├── KeyInUrl            400     api_key_in_url
    │   ├── DuplicateHeader     400     duplicate_header (two Authorization headers)
    │   ├── WebhookTargetRefused 400    webhook_target_refused
    │   ├── SubscriptionLimit   400     subscription_limit (a key has its most subscriptions)
    │   ├── MailNotConfigured   400     mail_not_configured (sendUpdates=all without SMTP)
    │   └── InboundMailRefused  400     inbound_mail_refused (a reply that cannot be applied)
    ├── AuthError               401     WWW-Authenticate: Bearer error="invalid_token"
    │   ├── MissingKey                  missing_api_key
    │   ├── MalformedKey                malformed_api_key
    │   ├── UnknownKey                  unknown_api_key
    │   ├── ExpiredKey                  expired_api_key
    │   ├── RevokedKey                  revoked_api_key
    │   ├── InvalidAccessToken          invalid_access_token (an OAuth access token, at /mcp)
    │   ├── WrongAppPassword            wrong_app_password (CalDAV's HTTP Basic sign-in)
    │   └── InsufficientScope           insufficient_scope (error="insufficient_scope")
    ├── MayNotInvite            403     may_not_invite (a key not made with --may-invite)
    ├── NotFound                404     not_found
    ├── Conflict                409     conflict (ifFree: the time is taken), with conflicts=[…]
    │   └── ChangedSince        409     conflict (an undo: the event changed since), changes=[…]
    ├── RuleViolation           409     rule_violation (the owner's rules), errors=[{rule, message}]
    ├── AlreadyUndone           409     already_undone (an undo of a change undone before)
    ├── ProposalNotPending      409     proposal_not_pending (approved, rejected, expired…)
    ├── DefaultCalendarKept     409     default_calendar (the default calendar is not deleted)
    ├── ReadOnlyCalendar        409     read_only_calendar (a connected calendar's events)
    ├── IdempotencyInFlight     409     idempotency_in_flight
    ├── WebhookDisabled         409     webhook_disabled
    ├── SlotTaken               409     slot_taken (a link's slot no longer free), slots=[…]
    ├── SyncTokenExpired        410     sync_token_expired
    ├── LinkGone                410     link_gone (a scheduling link used up, expired or revoked)
    ├── DavRefused              403     dav_precondition (CalDAV: a precondition the RFCs name)
    │   ├── DavStale            412     dav_precondition_failed (If-Match, If-None-Match)
    │   ├── DavNotAllowed       405     dav_not_allowed (MKCALENDAR where something is)
    │   ├── DavConflict         409     dav_conflict (MKCALENDAR outside the calendar home)
    │   └── DavBadName          400     dav_bad_name (a name no object can have)
    ├── SignInLocked            429     sign_in_locked (CalDAV Basic: too many wrong passwords)
    ├── PayloadTooLarge         413     payload_too_large
    ├── UnsupportedMediaType    415     unsupported_media_type
    ├── IdempotencyMismatch     422     idempotency_key_reused
    ├── RateLimited             429     rate_limited
    └── InviteLimit             429     invite_limit (CALENDAR_INVITES_PER_DAY recipients)
"""

from __future__ import annotations

from typing import Any, ClassVar


class CalendarError(Exception):
    """The base every error shares: a subclass declares its data (``code``, ``status``,
    ``title``, the values it carries) and writes a constructor only to word its message."""

    code: ClassVar[str] = "error"
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Error"
    """``code``, ``status`` and ``title``: a subclass's, given where it is declared
    (``class NotFound(CalendarError, code="not_found", status=404, title="Not found")``)."""
    fixed_message: ClassVar[str] = ""
    """The message of an error that always says the same: raised without one."""
    extras: ClassVar[tuple[str, ...]] = ()
    """The values it carries beside its message, as attributes, in the order the constructor
    takes them after the message (or by name); one not given is ``None``."""
    shown: ClassVar[tuple[str, ...]] = ()
    """Those of ``extras`` its body (``to_dict``) carries too, named in camelCase."""

    def __init_subclass__(
        cls, *, code: str | None = None, status: int | None = None, title: str | None = None
    ) -> None:
        super().__init_subclass__()
        if code is not None:
            cls.code = code
        if status is not None:
            cls.status = status
        if title is not None:
            cls.title = title

    def __init__(self, message: str | None = None, *values: Any, **named: Any) -> None:
        if message is None:
            message = self.fixed_message
        unknown = set(named) - set(self.extras)
        if len(values) > len(self.extras) or unknown:
            raise TypeError(f"{type(self).__name__} takes {self.extras}, not {values} {named}")
        super().__init__(message)
        self.message = message
        given = dict(zip(self.extras, values, strict=False)) | named
        for name in self.extras:
            setattr(self, name, given.get(name))

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        for name in self.shown:
            value = getattr(self, name)
            first, *rest = name.split("_")
            body[first + "".join(word.title() for word in rest)] = (
                list(value) if isinstance(value, list) else value
            )
        return body


class ConfigError(CalendarError, code="config_error", title="Configuration error"):
    pass


class FieldError(dict[str, str]):
    """``{"field": ..., "message": ...}``: one bad input field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field=field, message=message)


class ValidationFailed(CalendarError, code="validation_error", status=400, title="Invalid request"):
    extras = ("errors",)
    shown = ("errors",)
    errors: list[FieldError]

    def __init__(self, errors: list[FieldError], message: str | None = None) -> None:
        if message is None:
            fields = ", ".join(dict.fromkeys(e["field"] for e in errors))
            message = f"The request has invalid fields: {fields}." if fields else "Invalid request."
        super().__init__(message, errors)


class InvalidICalendar(ValidationFailed, code="invalid_icalendar", title="Not iCalendar"):
    """An import's body or file that is not iCalendar text (RFC 5545), or cannot be read
    whole: cut short, nested too deep."""

    def __init__(self, message: str, *, field_name: str = "body") -> None:
        super().__init__([FieldError(field_name, message)], message)


class UnknownParameter(ValidationFailed, code="unknown_parameter", title="Unknown query parameter"):
    """Query parameters an operation does not take (a typo such as ``timemin``, or a filter
    it does not have): refused, as unknown body fields are, rather than ignored, which would
    answer for every calendar and all time. ``errors``: one per parameter, ``field`` its
    name."""

    def __init__(self, errors: list[FieldError]) -> None:
        names = list(dict.fromkeys(e["field"] for e in errors))
        plural = "s" if len(names) > 1 else ""
        super().__init__(errors, f"Unknown query parameter{plural}: {', '.join(names)}.")


class BadRequest(CalendarError, code="bad_request", status=400, title="Bad request"):
    pass


class KeyInUrl(BadRequest, code="api_key_in_url", title="API key in the URL"):
    def __init__(self, parameter: str) -> None:
        super().__init__(
            f"Do not put an API key in the URL (query parameter {parameter!r}): URLs end up in "
            "logs and browser history. Send it as 'Authorization: Bearer <API_KEY>' instead, "
            "and consider revoking the key if it was a real one."
        )


class DuplicateHeader(BadRequest, code="duplicate_header", title="Duplicate header"):
    extras = ("header",)
    header: str

    def __init__(self, header: str, count: int) -> None:
        super().__init__(
            f"The request carries {count} {header} headers; send exactly one "
            f"(which of them to use would be a guess).",
            header,
        )


class WebhookTargetRefused(
    BadRequest, code="webhook_target_refused", title="Webhook target refused"
):
    pass


class SubscriptionLimit(BadRequest, code="subscription_limit", title="Too many subscriptions"):
    """A key that already has the most webhook subscriptions a key may have asks for more."""

    extras = ("most",)
    most: int

    def __init__(self, most: int) -> None:
        super().__init__(
            f"This API key already has {most} webhook subscriptions, the most a key may have: "
            "delete one it no longer needs (deleteSubscription) first.",
            most,
        )


class MailNotConfigured(BadRequest, code="mail_not_configured", title="Mail not configured"):
    """``sendUpdates=all`` on a service that has no SMTP server set."""

    fixed_message = (
        "This service sends no email: its operator has not set CALENDAR_SMTP_URL. Nothing "
        "was changed; send the request again with sendUpdates=none (the default), and "
        "tell the attendees yourself."
    )


class InboundMailRefused(BadRequest, code="inbound_mail_refused", title="Inbound mail refused"):
    """An inbound message (an iMIP ``REPLY``) that cannot be applied: nothing was changed."""


class MayNotInvite(
    CalendarError, code="may_not_invite", status=403, title="May not send invitations"
):
    """A key (or connected app) not made with ``--may-invite`` asks to send invitations."""

    fixed_message = (
        "This API key may not send email invitations (sendUpdates=all): nothing was "
        "changed. Send the request with sendUpdates=none, or ask the owner for a key made "
        "with --may-invite (the key page and the consent page offer it)."
    )


class AuthError(CalendarError, status=401, title="Unauthorized"):
    """A 401. ``bearer_error`` and ``bearer_description`` make its ``WWW-Authenticate``
    challenge (RFC 6750 §3): fixed ASCII texts per reason, never the message, which may name
    a calendar (any text, "Личное" or one with quotes and line breaks): header values carry
    no user text."""

    bearer_error: ClassVar[str] = "invalid_token"
    bearer_description: ClassVar[str] = "The access token is not valid."


class MissingKey(AuthError, code="missing_api_key"):
    bearer_description = "No API key was sent."

    fixed_message = "No API key: send 'Authorization: Bearer <API_KEY>'."


class MalformedKey(AuthError, code="malformed_api_key"):
    bearer_description = "The API key is malformed."

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            "The API key is malformed"
            + (f" ({detail})" if detail else "")
            + ": check that it was copied whole, as shown when it was created."
        )


class UnknownKey(AuthError, code="unknown_api_key"):
    bearer_description = "The API key is not known."

    fixed_message = "The API key is not known to this service."


class WrongAppPassword(AuthError, code="wrong_app_password"):
    """HTTP Basic (CalDAV): no owner with that email has an app password with that secret
    (a wrong email, a wrong or mistyped secret, a key that is no app password)."""

    bearer_description = "Wrong email or app password."

    fixed_message = (
        "Wrong email or app password: sign in with the owner's email and an app password "
        "(a key created as one: keys create --app-password, or App passwords on the "
        "settings pages)."
    )


class ExpiredKey(AuthError, code="expired_api_key"):
    bearer_description = "The API key has expired."

    def __init__(self, expired_at: str) -> None:
        super().__init__(f"The API key expired at {expired_at}; ask its owner for a new one.")


class RevokedKey(AuthError, code="revoked_api_key"):
    """A revoked key, or a revoked grant of a connected app (``app``), saying who revoked it:
    ``by`` is its ``api_keys.revoked_by`` (``keys.REVOKED_BY``): ``owner``, ``app`` (the app
    that held the grant revoked it, RFC 7009), ``reuse`` (the service, when a used code or
    refresh token came back) or ``calendar`` (its one calendar was deleted). ``None``: revoked
    before the reason was kept: a key's was its owner (nobody else could revoke one then), a
    grant's is not known (its message names every possibility)."""

    bearer_description = "The API key has been revoked."
    _KEYS: ClassVar[dict[str, str]] = {
        "owner": "The API key has been revoked by its owner.",
        "calendar": "The API key was revoked: the calendar it was limited to has been deleted.",
    }
    _APPS: ClassVar[dict[str | None, str]] = {
        "owner": "This access has been revoked by its owner: authorize again to reconnect.",
        "app": "This access was revoked by the app that held it: authorize again to reconnect.",
        "reuse": "This access was revoked by the service because a used authorization code or "
        "refresh token was presented again (a copy may be in other hands): authorize again.",
        "calendar": "This access was revoked: the calendar it was limited to has been deleted. "
        "Authorize again to reconnect to another.",
        None: "This access has been revoked by its owner, or by the service after a used "
        "authorization code or refresh token was presented again: authorize again.",
    }

    def __init__(self, by: str | None = "owner", *, app: bool = False) -> None:
        if app:
            super().__init__(self._APPS.get(by, self._APPS[None]))
        else:
            super().__init__(self._KEYS.get(by or "owner", self._KEYS["owner"]))


class InvalidAccessToken(AuthError, code="invalid_access_token"):
    """An OAuth access token refused at ``/mcp``: unknown, expired, or for another resource
    (RFC 6750 ``invalid_token``; the client refreshes it or starts the flow again)."""

    bearer_description = "The access token is unknown, expired or for another resource."

    def __init__(self, reason: str) -> None:
        super().__init__(f"The access token {reason}: refresh it or authorize again.")


class InsufficientScope(AuthError, code="insufficient_scope", title="Insufficient scope"):
    bearer_error = "insufficient_scope"
    bearer_description = "The key may not do this or reach this calendar."
    extras = ("required_scope",)
    required_scope: str | None


class NotFound(CalendarError, code="not_found", status=404, title="Not found"):
    pass


class Conflict(CalendarError, code="conflict", status=409, title="Time not free"):
    """``ifFree``: the time asked for overlaps busy events (``conflicts``: their times, and ids
    and titles only where the key may read them)."""

    extras = ("conflicts",)
    shown = ("conflicts",)
    conflicts: list[dict[str, Any]]


class RuleViolation(
    CalendarError, code="rule_violation", status=409, title="Against the owner's rules"
):
    """A key's write that breaks the owner's rules for agents (``calendar.rules``), whose
    ``onViolation`` is ``refuse``: ``errors`` names each rule broken (``{rule, message}``,
    ``rule`` as in the rules object), ``suggestions`` up to 3 nearest times of the same length
    that pass every rule (``{startsAt, endsAt}``)."""

    extras = ("errors", "suggestions")
    shown = ("errors", "suggestions")
    errors: list[dict[str, str]]
    suggestions: list[dict[str, str]]

    def __init__(
        self, errors: list[dict[str, str]], suggestions: list[dict[str, str]] | None = None
    ) -> None:
        rules = ", ".join(dict.fromkeys(e["rule"] for e in errors))
        first = errors[0]["message"] if errors else ""
        super().__init__(
            f"The owner's rules for agents refuse this time ({rules}): {first} "
            "Pick one of the suggestions, or ask findFreeTime for times that keep the rules.",
            errors,
            suggestions or [],
        )


class ChangedSince(Conflict, title="Changed since"):
    """An undo of a change whose event is no longer as the change left it: ``changes`` are
    the later changes of that event (``{id, at, kind, eventId}``), newest first, named in the
    message too; undo them first, or force the undo."""

    extras = ("changes",)
    shown = ("changes",)
    changes: list[dict[str, Any]]

    def __init__(self, message: str, changes: list[dict[str, Any]]) -> None:
        super().__init__(message, changes)
        self.conflicts = []  # a Conflict's busy times: none (it is the change log's conflict)


class AlreadyUndone(CalendarError, code="already_undone", status=409, title="Already undone"):
    """An undo of a change that an earlier undo undid already (``undone_by``)."""

    extras = ("undone_by",)
    shown = ("undone_by",)
    undone_by: str

    def __init__(self, change_id: str, undone_by: str) -> None:
        super().__init__(
            f"Change {change_id} has already been undone, by change {undone_by}. To make it "
            f"again, undo {undone_by}.",
            undone_by,
        )


class ProposalNotPending(
    CalendarError, code="proposal_not_pending", status=409, title="Proposal not pending"
):
    """Approving or rejecting a proposal (a write that waited for the owner) that is no longer
    pending: decided already, or expired. ``proposal_status`` says which."""

    extras = ("proposal_status",)
    shown = ("proposal_status",)
    proposal_status: str


class DefaultCalendarKept(
    CalendarError, code="default_calendar", status=409, title="Default calendar"
):
    """The owner's default calendar cannot be deleted: keys without a calendar and events sent
    without one go there."""

    fixed_message = (
        "The default calendar cannot be deleted: events created without a calendar go "
        "there. Delete its events one by one, or rename it."
    )


class ReadOnlyCalendar(
    CalendarError, code="read_only_calendar", status=409, title="Read-only calendar"
):
    """A write to a connected calendar's mirror (``visibility: details``): only the poller
    writes its events, from the source."""

    def __init__(self, name: str, connection_id: str) -> None:
        super().__init__(
            f"The calendar {name!r} is read-only: it shows the connected calendar "
            f"{connection_id!r}, whose events are changed where they are kept. Nothing was "
            "written; write to another calendar (calendarId), or change the event at its "
            "source."
        )


class IdempotencyInFlight(
    CalendarError, code="idempotency_in_flight", status=409, title="Request in progress"
):
    fixed_message = "A request with this Idempotency-Key is still being processed; retry shortly."


class WebhookDisabled(CalendarError, code="webhook_disabled", status=409, title="Webhook disabled"):
    pass


class SlotTaken(CalendarError, code="slot_taken", status=409, title="Slot taken"):
    """A scheduling link's booking of a time that is no longer free (taken by another guest or
    a meeting made meanwhile, or outside the link's window): ``slots``, the free ones now."""

    extras = ("slots",)
    shown = ("slots",)
    slots: list[dict[str, Any]]


class LinkGone(CalendarError, code="link_gone", status=410, title="Link no longer valid"):
    """A scheduling link (or a booking's manage link) that was used up, expired, revoked, or
    whose key was revoked: it takes no more bookings."""


class SyncTokenExpired(
    CalendarError, code="sync_token_expired", status=410, title="Sync token expired"
):
    """A sync token older than the changes kept (``CALENDAR_SYNC_RETENTION_DAYS``): the
    client lists again from scratch (Google Calendar answers the same with 410 Gone)."""

    def __init__(self, days: int) -> None:
        super().__init__(
            f"This sync token is older than the {days} days of changes kept; list the events "
            "again without syncToken (the last page carries a new nextSyncToken)."
        )


class DavRefused(CalendarError, code="dav_precondition", status=403, title="Forbidden"):
    """A CalDAV (WebDAV) request refused on a precondition: ``condition`` is the element the
    RFCs name for it (Clark notation, ``{urn:ietf:params:xml:ns:caldav}valid-calendar-data``),
    put in the answer's ``DAV:error`` body; ``href``: a path the element carries (the object
    a ``no-uid-conflict`` names)."""

    extras = ("condition", "href")
    condition: str | None
    href: str | None


class DavStale(DavRefused, code="dav_precondition_failed", status=412, title="Precondition failed"):
    """``If-Match`` names another version of the object, or ``If-None-Match: *`` one that
    exists (RFC 9110 §13.1): 412."""


class DavNotAllowed(DavRefused, code="dav_not_allowed", status=405, title="Method not allowed"):
    """A MKCALENDAR where something is already (RFC 4791 §5.3.1.2, ``DAV:resource-must-be-null``):
    405."""


class DavConflict(DavRefused, code="dav_conflict", status=409, title="Conflict"):
    """A MKCALENDAR anywhere but directly in the calendar home (RFC 4791 §5.3.1.2,
    ``CALDAV:calendar-collection-location-ok``): 409."""


class DavBadName(DavRefused, code="dav_bad_name", status=400, title="Bad object name"):
    """A CalDAV object name no object can have (too long, ``.`` or ``..``, a ``/`` or a
    control character): 400."""


class SignInLocked(
    CalendarError, code="sign_in_locked", status=429, title="Too many failed sign-ins"
):
    """HTTP Basic sign-in (CalDAV) refused while too many wrong passwords were given for
    the email or from the address, as on the sign-in page (``signin``)."""

    extras = ("retry_after",)
    retry_after: int

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"Too many failed sign-ins for this email or network address: try again in "
            f"{retry_after} seconds.",
            retry_after,
        )


class PayloadTooLarge(
    CalendarError, code="payload_too_large", status=413, title="Payload too large"
):
    pass


class UnsupportedMediaType(
    CalendarError, code="unsupported_media_type", status=415, title="Unsupported media type"
):
    pass


class IdempotencyMismatch(
    CalendarError, code="idempotency_key_reused", status=422, title="Idempotency key reused"
):
    fixed_message = (
        "This Idempotency-Key was already used with a different request body; "
        "use a new key for a new request."
    )


class RateLimited(CalendarError, code="rate_limited", status=429, title="Too many requests"):
    extras = ("retry_after", "limit", "period")
    retry_after: int
    limit: int
    period: int

    def __init__(self, retry_after: int, limit: int, period: int) -> None:
        super().__init__(
            f"This API key made more than {limit} requests in {period} seconds; "
            f"retry after {retry_after} seconds.",
            retry_after,
            limit,
            period,
        )


class InviteLimit(CalendarError, code="invite_limit", status=429, title="Too many invitations"):
    """A key's invitations of the last day would exceed ``CALENDAR_INVITES_PER_DAY``
    recipients."""

    extras = ("most",)
    most: int

    def __init__(self, most: int, sent: int, asked: int) -> None:
        super().__init__(
            f"This API key has invited {sent} recipients in the last 24 hours and asks for "
            f"{asked} more: at most {most} a day (CALENDAR_INVITES_PER_DAY). Nothing was "
            "changed; send it with sendUpdates=none, or later.",
            most,
        )
