"""Tests of the core's recurrence package (calendar_service/calendar/recurrence/): rules, their
lines, bounded expansion."""
