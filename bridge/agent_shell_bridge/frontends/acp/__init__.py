"""``agent-shell-bridge acp``: the Agent Client Protocol front end (stdio)."""
