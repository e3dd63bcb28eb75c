"""One MCP server process: its lifetime (``lifecycle``) and its supervisor (``supervise``)."""
