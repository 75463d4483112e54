"""The PostgreSQL backend (``postgresql://…``)."""
