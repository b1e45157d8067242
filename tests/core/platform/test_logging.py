"""The service owns its logging: records go through a queue to a thread that formats them, no
library installs a handler of its own, and an unexpected error's text stays out of the log."""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Iterator

import pytest

from calendar_service.access.ratelimit import RateLimiter
from calendar_service.asgi.context import Services
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.logs import (
    WITHHOLD_EXCEPTION_TEXT,
    configure_logging,
    stop_logging,
)
from mcp_tools.http import mcp_http


@contextlib.contextmanager
def bare_root_logger() -> Iterator[logging.Logger]:
    """The root logger as a fresh process has it: no handler at all (pytest's put back after)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        yield root
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_building_the_mcp_endpoint_leaves_the_root_logger_alone(
    config: Config, db: Database
) -> None:
    # The SDK's MCPServer() calls logging.basicConfig with a rich handler when the root logger
    # has none; that handler rendered every traceback on the event loop.
    with bare_root_logger() as root:
        level = root.level
        mcp_http(Services(config=config, db=db, limiter=RateLimiter(10, 60)))
        handlers, after = root.handlers[:], root.level
    assert handlers == []
    assert after == level


def test_a_traceback_is_formatted_by_the_logging_thread_not_the_caller() -> None:
    formatted_in: list[threading.Thread] = []

    class Traced(Exception):
        def __str__(self) -> str:  # called when the traceback is formatted
            formatted_in.append(threading.current_thread())
            return "traced"

    out = io.StringIO()
    configure_logging("INFO", stream=out)
    try:
        raise Traced()
    except Traced as exc:
        logging.getLogger("calendar_service.test").error("it failed (%s)", "req_1", exc_info=exc)
    assert formatted_in == []  # not on the way in
    stop_logging()  # writes out what is queued

    text = out.getvalue()
    assert "ERROR calendar_service.test: it failed (req_1)" in text
    assert "Traceback (most recent call last)" in text and "Traced: traced" in text
    assert formatted_in and threading.current_thread() not in formatted_in


def test_an_unexpected_errors_text_is_withheld_but_its_frames_are_kept() -> None:
    def parse(value: str) -> int:
        try:
            return {"a": 1}[value]
        except KeyError:
            raise ValueError(f"bad value {value!r}") from None

    def handler(title: str) -> None:
        try:
            parse(title)
        except ValueError as exc:
            raise RuntimeError(f"wrapped: {title}") from exc

    out = io.StringIO()
    configure_logging("INFO", stream=out)
    try:
        handler("".join(reversed("terces s'rellac")))  # its text nowhere in the source
    except RuntimeError as exc:
        logging.getLogger("calendar_service.asgi").error(
            "unhandled", exc_info=exc, extra={WITHHOLD_EXCEPTION_TEXT: True}
        )
    stop_logging()

    text = out.getvalue()
    assert "secret" not in text
    assert "ValueError (message withheld)" in text and "RuntimeError (message withheld)" in text
    assert "in parse" in text and "in handler" in text  # where it happened is all there


@pytest.fixture
def uvicorn_configured_its_loggers() -> Iterator[None]:
    """``uvicorn``'s loggers as uvicorn's own configuration leaves them (a handler each, not
    propagating, at uvicorn's --log-level); put back as they were after the test."""
    saved = []
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        saved.append((logger, logger.handlers[:], logger.propagate, logger.disabled, logger.level))
        logger.handlers[:] = [logging.StreamHandler(io.StringIO())]
        logger.propagate = False
        logger.setLevel(logging.WARNING)
    yield
    for logger, handlers, propagate, disabled, level in saved:
        logger.handlers[:] = handlers
        logger.propagate, logger.disabled = propagate, disabled
        logger.setLevel(level)


@pytest.mark.usefixtures("uvicorn_configured_its_loggers")
def test_uvicorn_logs_through_the_service_and_its_access_log_stays_off() -> None:
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    logging.getLogger("uvicorn.error").info("Uvicorn running")
    logging.getLogger("uvicorn.access").info('127.0.0.1 - "GET /x?api_key=secret" 200')
    logging.getLogger("mcp.server").info("Tool 'x' failed: 'a caller's text'")
    stop_logging()

    text = out.getvalue()
    assert "INFO uvicorn.error: Uvicorn running" in text
    assert "api_key" not in text and "caller" not in text
