"""turn package."""
