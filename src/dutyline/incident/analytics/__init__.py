"""Aggregates over the incident tables for the insight domain."""
