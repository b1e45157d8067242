"""A small Python client for the calendar API (httpx), with paging and safe retries.

CALENDAR_API_KEY=calsk_... python examples/python_client.py
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx


class CalendarClient:
    def __init__(self, base_url: str, api_key: str) -> None:
        self._http = httpx.Client(
            base_url=f"{base_url.rstrip('/')}/api/v1",
            headers={"Authorization": f"Bearer {api_key}"},  # never in the URL
            timeout=10,
        )

    def events(self, time_min: datetime, time_max: datetime) -> Iterator[dict[str, Any]]:
        """Every event overlapping [time_min, time_max), following nextPageToken."""
        params = {"timeMin": time_min.isoformat(), "timeMax": time_max.isoformat()}
        while True:
            page = self._checked(self._http.get("/calendar/events", params=params))
            yield from page["events"]
            if "nextPageToken" not in page:
                return
            params["pageToken"] = page["nextPageToken"]

    def create(self, **event: Any) -> dict[str, Any]:
        """Create an event. The Idempotency-Key makes the retry below safe: at most one event."""
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        for attempt in range(3):
            try:
                response = self._http.post("/calendar/events", json=event, headers=headers)
            except httpx.TransportError:
                if attempt == 2:
                    raise
                continue
            if response.status_code != 409:  # 409: the first try is still in flight
                return self._checked(response)
        return self._checked(response)

    @staticmethod
    def _checked(response: httpx.Response) -> Any:
        if response.is_error:
            problem = response.json()
            fields = "; ".join(f"{e['field']}: {e['message']}" for e in problem.get("errors", []))
            raise RuntimeError(
                f"{problem['status']} {problem['code']}: {problem['detail']} {fields}".strip()
            )
        return response.json()


def main() -> None:
    client = CalendarClient(
        os.environ.get("CALENDAR_BASE_URL", "http://127.0.0.1:8000"),
        os.environ["CALENDAR_API_KEY"],
    )
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    created = client.create(
        title="Call with Ana",
        startsAt=start.isoformat(),
        endsAt=(start + timedelta(minutes=30)).isoformat(),
    )
    print("created", created["id"], created["startsAt"])
    for event in client.events(start - timedelta(days=1), start + timedelta(days=7)):
        print(event["startsAt"], event["title"], f"({event['calendar']})")


if __name__ == "__main__":
    main()
