"""Tests of the time triggers, planned and fired by the core."""
