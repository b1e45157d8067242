"""MCP tools for AI assistants, on the same core and the same API keys as the REST API.

server.py       the MCPServer and its tools (each call through ``gateway.perform``)
shapes.py       input schemas and output schemas, built from the core's public models
texts.py        what a model reads: the instructions, each tool's and argument's description
portable.py     schemas in the subset OpenAI's strict mode and Gemini's declarations take
per_key.py      tools/list lists only the tools the calling key may call
detail.py       a listed event as a summary unless the call asks for every field
teach.py        refusals worded for the model: how a retry can succeed
errors.py       the one translation of ``CalendarError`` into tool errors
auth.py         the key check and Origin validation in front of the HTTP transport
oauth.py        OAuth 2.1 for remote MCP: the SDK's authorization server on our storage
strict_json.py  a JSON-RPC body with a duplicate key refused before the SDK reads it
http.py         streamable HTTP at /mcp, mounted by ``calendar_service.cli.asgi_app``
stdio.py        ``calendar-service mcp``: stdio, acting with ``CALENDAR_API_KEY``
"""
