"""Calendar service: a calendar core with REST, MCP and account-settings fronts."""

__version__ = "0.1.0"
