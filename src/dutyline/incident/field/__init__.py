"""Custom incident fields: definitions per account and validation of their values."""
