"""transport package."""
