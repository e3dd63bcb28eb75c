"""calls package."""
