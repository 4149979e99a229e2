"""A2A agents: records, card resolution and the gateway the agent loop talks through."""
