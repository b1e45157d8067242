"""MCP tools for AI assistants, on the same core and the same API keys as the REST API.

server.py       the MCPServer and its tools (each call through ``gateway.perform``)
shapes.py       input schemas and result models, built from the core's public models
errors.py       the one translation of ``CalendarError`` into tool errors
auth.py         the key check and Origin validation in front of the HTTP transport
oauth.py        OAuth 2.1 for remote MCP: the SDK's authorization server on our storage
strict_json.py  a JSON-RPC body with a duplicate key refused before the SDK reads it
http.py         streamable HTTP at /mcp, mounted by ``calendar_service.cli.asgi_app``
stdio.py        ``calendar-service mcp``: stdio, acting with ``CALENDAR_API_KEY``
"""
