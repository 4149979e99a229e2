"""Roles: the built-in Owner (one per account) and Admin with every permission, Member with
the read-only ones (channel, template, mapping data and integration views), and custom roles."""
