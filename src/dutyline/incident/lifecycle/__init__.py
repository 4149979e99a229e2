"""Incident writes: create, progress transitions, edits, assignment, merge, custom fields."""
