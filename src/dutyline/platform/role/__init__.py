"""Roles: the built-in Owner, Admin and Member, and custom roles (decisions.md §2)."""
