"""Change events: pushed deployments, configuration changes and feature flags."""
