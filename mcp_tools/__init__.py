"""MCP tools for AI assistants, on the same core and the same API keys as the REST API.

server.py   the MCPServer and its five tools (each call through ``gateway.perform``)
shapes.py   input schemas and result models, built from the core's public models
errors.py   the one translation of ``CalendarError`` into tool errors
auth.py     the key check and Origin validation in front of the HTTP transport
http.py     streamable HTTP at /mcp, mounted by ``calendar_service.app``
stdio.py    ``calendar-service mcp``: stdio, acting with ``CALENDAR_API_KEY``
"""
