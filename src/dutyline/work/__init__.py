"""Durable work: jobs in the database, claimed, leased, retried, reaped."""
