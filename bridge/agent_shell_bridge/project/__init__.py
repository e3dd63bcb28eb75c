"""project package."""
