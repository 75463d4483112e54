"""Read side: titles, lineage, projections and the session query service."""
