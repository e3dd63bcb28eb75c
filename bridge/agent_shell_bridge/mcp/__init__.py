"""The bridge as a client of Model Context Protocol servers (stdio, streamable HTTP, SSE).

The user's MCP servers become tools of a session, ``mcp__<server>__<tool>``, under
the bridge's own policy, action log and output limits. Our code is configuration
(``config``), names (``naming``), policy (``policy``), result text (``results``),
lifecycle (``client.lifecycle``, ``client.transports``, ``client.supervise``), the
session's tool source (``hub``) and its attachment to a session (``session``); the
protocol itself is the official ``mcp`` SDK's, imported lazily only when a session
has servers to start.
"""
