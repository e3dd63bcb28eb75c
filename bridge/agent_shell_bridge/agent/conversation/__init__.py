"""conversation package."""
