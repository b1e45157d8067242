"""The service's logging: one configuration, owned here and applied by the entry points
(``calendar-service serve`` in each server process, ``worker`` and ``mcp``), never by a library.

The root logger gets one handler, a queue: a record is put on it as it is logged and a thread
(``QueueListener``) formats it and writes it to stderr, plain text, one record per line (and a
traceback, if any, on the lines below). So no handler writes to a stream or formats a traceback
on the event loop: a burst of errors costs the loop a queue put each, not the rendering.

uvicorn's own loggers lose their handlers and propagate to the root, so its lines come through
the same queue; its access log is off (its lines would carry query strings). Libraries that
log per request at INFO, with text we do not control (the MCP SDK quotes tool errors, httpx
logs URLs with their query strings), are kept at WARNING.

The MCP SDK's ``MCPServer()`` calls ``logging.basicConfig`` with a ``rich`` handler that renders
tracebacks on the loop (some 200 ms each); ``root_logger_kept`` undoes it where the server is
built, whatever the order of things.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import logging
import logging.handlers
import queue
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Libraries that would log a line per request at INFO, or text that may carry a caller's data.
QUIET_LIBRARIES = ("mcp", "httpx", "httpcore", "apscheduler", "sse_starlette", "alembic")
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.asgi")
ACCESS_LOGGER = "uvicorn.access"  # off: its lines carry query strings (the history has calls)

# ``extra={WITHHOLD_EXCEPTION_TEXT: True}``: log the traceback's frames and the exception's
# type, not its message (which may quote a caller's data).
WITHHOLD_EXCEPTION_TEXT = "withhold_exception_text"


class PlainFormatter(logging.Formatter):
    """``FORMAT``, tracebacks as Python prints them (or frames only, when withheld)."""

    def __init__(self) -> None:
        super().__init__(FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and getattr(record, WITHHOLD_EXCEPTION_TEXT, False):
            exc = record.exc_info[1]
            if exc is not None and not record.exc_text:
                record.exc_text = frames_only(exc)
        return super().format(record)


def frames_only(exc: BaseException) -> str:
    """The traceback of ``exc`` (and the exceptions it was raised from) with each exception's
    type but not its message."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    parts: list[str] = []
    for position, item in enumerate(reversed(chain)):
        if position:
            parts.append("\nwhich led to:\n\n")
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_tb(item.__traceback__))
        name = type(item).__qualname__
        module = type(item).__module__
        qualified = name if module == "builtins" else f"{module}.{name}"
        parts.append(f"{qualified} (message withheld)\n")
    return "".join(parts).rstrip("\n")


class _Stderr(logging.StreamHandler):
    """Writes to ``sys.stderr`` as it is when the record is written (as ``logging.lastResort``
    does), not as it was when logging was configured."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        pass


class _QueueHandler(logging.handlers.QueueHandler):
    """Puts records on the queue as they are: the message is merged with its arguments here
    (cheap, and the arguments may change later), the traceback is left to the listener."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record = copy.copy(record)
        record.msg = record.getMessage()
        record.args = None
        return record


@dataclass(frozen=True)
class _LoggerState:
    handlers: list[logging.Handler]
    level: int
    propagate: bool
    disabled: bool

    @classmethod
    def of(cls, logger: logging.Logger) -> _LoggerState:
        return cls(logger.handlers[:], logger.level, logger.propagate, logger.disabled)

    def restore(self, logger: logging.Logger) -> None:
        logger.handlers[:] = self.handlers
        logger.setLevel(self.level)
        logger.propagate = self.propagate
        logger.disabled = self.disabled


@dataclass
class _Setup:
    handler: _QueueHandler
    listener: logging.handlers.QueueListener
    previous: dict[str, _LoggerState]  # "" is the root logger


_setup: _Setup | None = None
_TOUCHED = ("", *UVICORN_LOGGERS, ACCESS_LOGGER, *QUIET_LIBRARIES)


def _set(
    name: str, *, level: int | None = None, propagate: bool = True, disabled: bool = False
) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.propagate = propagate
    logger.disabled = disabled
    if level is not None:
        logger.setLevel(level)
    return logger


def configure_logging(level: str | int = "INFO", *, stream: IO[str] | None = None) -> None:
    """Make this module's configuration the process's: the root logger's only handler is the
    queue, written out to ``stream`` (stderr) by a thread. Calling it again only sets the level
    (and takes back uvicorn's loggers, should uvicorn have configured them since)."""
    global _setup
    resolved = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(resolved, int):
        raise ValueError(f"unknown log level {level!r}")
    if _setup is None:
        output = logging.StreamHandler(stream) if stream is not None else _Stderr()
        output.setFormatter(PlainFormatter())
        records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        previous = {name: _LoggerState.of(logging.getLogger(name)) for name in _TOUCHED}
        _setup = _Setup(
            _QueueHandler(records), logging.handlers.QueueListener(records, output), previous
        )
        _setup.listener.start()
        atexit.register(stop_logging)
    root = _set("", level=resolved)
    root.addHandler(_setup.handler)
    for name in UVICORN_LOGGERS:
        _set(name, level=logging.NOTSET)  # the root's level, not uvicorn's --log-level
    _set(ACCESS_LOGGER, propagate=False, disabled=True)
    for name in QUIET_LIBRARIES:
        _set(name, level=max(resolved, logging.WARNING))


def stop_logging() -> None:
    """Write out what is queued, stop the thread, and put back the loggers as they were."""
    global _setup
    if _setup is None:
        return
    setup, _setup = _setup, None
    logging.getLogger().removeHandler(setup.handler)
    setup.listener.stop()
    for handler in setup.listener.handlers:
        with contextlib.suppress(ValueError, OSError):  # a stream closed before us
            handler.flush()
    for name, state in setup.previous.items():
        state.restore(logging.getLogger(name))


@contextlib.contextmanager
def root_logger_kept() -> Iterator[None]:
    """Undo whatever the code inside does to the root logger's handlers and level.

    For building the MCP SDK's server, whose constructor installs a ``rich`` handler on the root
    logger when it has none."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        for added in root.handlers[:]:
            if added not in handlers:
                root.removeHandler(added)
                added.close()
        root.setLevel(level)


__all__ = [
    "WITHHOLD_EXCEPTION_TEXT",
    "configure_logging",
    "frames_only",
    "root_logger_kept",
    "stop_logging",
]
