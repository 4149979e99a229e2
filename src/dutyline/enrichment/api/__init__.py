"""Mapping APIs: HTTP endpoints that enrichment mappings call at ingest."""
