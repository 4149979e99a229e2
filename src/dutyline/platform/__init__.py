"""Accounts, members, roles, permissions, app keys, teams and the audit log."""
