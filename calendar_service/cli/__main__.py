"""``python -m calendar_service.cli``: the ``calendar-service`` command."""

from calendar_service.cli import main

main()
