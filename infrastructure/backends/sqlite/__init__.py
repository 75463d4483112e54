"""The SQLite backend (``sqlite:///path``)."""
