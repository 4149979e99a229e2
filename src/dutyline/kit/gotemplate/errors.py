"""Errors of the Go template engine: where Go errors, we error too."""

from __future__ import annotations


class TemplateError(Exception):
    """Any failure to parse or run a template."""


class TemplateSyntaxError(TemplateError):
    """The template does not parse (Go's parse errors, unknown functions included)."""


class TemplateExecError(TemplateError):
    """The template failed while running (Go's exec errors)."""


class TemplateLimitError(TemplateExecError):
    """A sandbox bound was exceeded: steps, output size or `template` call depth."""
