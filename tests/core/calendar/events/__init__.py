"""Tests of the core's events package (calendar_service/calendar/events/), a module a file."""
