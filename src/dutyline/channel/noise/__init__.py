"""Noise control of a channel: inhibit, silence and drop (unsubscribe) rules."""
