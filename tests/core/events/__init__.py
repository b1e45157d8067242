"""Tests of the core's events package (calendar_service/events/), a module a file."""
