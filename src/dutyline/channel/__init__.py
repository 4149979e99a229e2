"""Channels: the collaboration spaces alerts and incidents live in."""
