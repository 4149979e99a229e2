"""Engine, transactions and table definitions (SQLAlchemy Core)."""
