"""Alert pipelines: per-integration rewrites and drops at ingest."""
