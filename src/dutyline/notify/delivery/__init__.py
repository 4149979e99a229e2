"""Delivering notifications: one durable job per (notification, recipient, channel), one
small adapter per channel, every attempt stored with its outcome."""
