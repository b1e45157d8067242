"""``caldav-server-tester`` run in this process, with one fix to its preparation: on a
server that stores events only and creates no calendars over CalDAV (MKCALENDAR), its task
calendar's preparation lets the refused MKCALENDAR escape and ends the whole run, where its
journal calendar's preparation, just after, records the feature as unsupported and goes on.
The task calendar's is given the journal's handling; every check is the tester's own.

    python tests/caldav/server_tester.py --caldav-url … (the tester's own options)
"""

from __future__ import annotations

from typing import Any

from caldav.lib.error import DAVError
from caldav_server_tester import checks
from caldav_server_tester.caldav_server_tester import check_server_compatibility

_prepare_tasks = checks.PrepareCalendar._prepare_task_calendar


def _prepare_task_calendar(self: Any, *args: Any, **kwargs: Any) -> bool:
    try:
        return bool(_prepare_tasks(self, *args, **kwargs))
    except DAVError:
        self.set_feature("save-load.todo", False)
        return False


checks.PrepareCalendar._prepare_task_calendar = _prepare_task_calendar  # type: ignore[method-assign]

if __name__ == "__main__":
    check_server_compatibility()
