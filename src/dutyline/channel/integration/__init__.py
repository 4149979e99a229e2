"""Integrations: the keyed entry points through which alerts reach a channel."""
