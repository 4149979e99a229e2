"""The operation layer: envelope, errors, i18n, auth, permissions, limits, OpenAPI."""
