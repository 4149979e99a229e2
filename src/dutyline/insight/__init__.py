"""Insights: incident analytics over windows, in the account's time zone."""
