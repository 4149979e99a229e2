"""Public status pages: the page, its feeds and email subscription (no app_key)."""
