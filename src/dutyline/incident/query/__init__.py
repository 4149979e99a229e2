"""Incident reads: info, list (offset and cursor paging), list-by-ids, feed, alerts."""
