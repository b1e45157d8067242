"""Tests of the core's journal: what a write records beside its rows."""
