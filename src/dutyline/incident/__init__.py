"""Incidents and alerts: ingestion, grouping, lifecycle, custom fields, feed, event stream."""
