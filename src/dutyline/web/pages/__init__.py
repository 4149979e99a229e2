"""The console's pages, one module per area (registered in web/routes.py)."""
