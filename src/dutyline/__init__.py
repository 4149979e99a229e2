"""dutyline: self-hostable on-call, incident-response and AI-SRE platform."""

__version__ = "0.1.0"
