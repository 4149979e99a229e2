"""Incident tests."""
