"""Monitors: Prometheus-compatible data sources and alert rules that evaluate on a schedule."""
