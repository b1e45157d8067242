"""Calendar service: a calendar core with REST, CalDAV, MCP and account-settings fronts.

The core's packages by floor, each importing only lower floors: ``platform`` (1), ``access``
(2), ``journal`` (3), ``calendar`` (4), ``governance`` (5), ``interop`` (6), ``delivery`` (7),
``operations`` (8, the gateway every write goes through). The fronts translate and import
the core: ``asgi`` (the plumbing the web fronts share), ``rest``, ``dav`` (CalDAV),
``account`` (the settings pages); ``cli`` is the assembly (the command and the ASGI app it
serves). ``mcp_tools`` and ``webhooks`` are fronts beside this package. docs/architecture.md
draws the map; tests/core/test_layering.py checks it.
"""

__version__ = "0.1.0"
