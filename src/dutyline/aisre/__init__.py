"""AI SRE: automation, MCP servers and A2A agents."""
