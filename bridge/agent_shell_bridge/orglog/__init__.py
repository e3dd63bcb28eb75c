"""orglog package."""
