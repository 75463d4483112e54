"""``agentlog serve``: a read-only web viewer over the query service (docs/viewer.md).

Starlette and uvicorn (already required by the MCP server) are imported only when
the server is built, so the command line's start-up never pays for them.
"""
