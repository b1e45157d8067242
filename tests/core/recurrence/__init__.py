"""Tests of the core's recurrence package (calendar_service/recurrence/): rules, their lines,
bounded expansion."""
