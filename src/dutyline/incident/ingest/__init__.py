"""Alert ingestion: the standard push endpoint, alert upsert, grouping into incidents."""
