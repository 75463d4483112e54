"""The store backends, one package each: ``memory`` (the library's POPO),
``sqlite`` and ``postgres``. A package holds its backend's factory, recorders,
views, search view and key store."""
