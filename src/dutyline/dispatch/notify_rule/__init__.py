"""Channel notification rules: who is told of which events of a channel's incidents, beside
escalation (docs/notification-rules.md)."""
