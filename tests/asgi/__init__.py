"""Tests of the ASGI plumbing (calendar_service/asgi/) on its own, under a small app."""
