"""Notifications: templates, delivery adapters and their history."""
