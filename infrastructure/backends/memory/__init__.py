"""The in-memory backend (``memory:``): the library's POPO persistence."""
