"""Command rules by family; :mod:`..commands` dispatches to them."""
