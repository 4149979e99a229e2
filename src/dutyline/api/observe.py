"""Structured logs (structlog, JSON, request_id bound per request) and Prometheus metrics."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}

# Keys whose values never reach a log line, whatever logs them.
SECRET_KEYS = frozenset(
    {"app_key", "api_key", "token", "password", "secret", "authorization", "http_post_token",
     "integration_key", "headers", "auth_config"}
)


def _redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if key.lower() in SECRET_KEYS:
            event[key] = "***"
    return event


# Bound loggers are cached on first use (cheaper). The test suite turns this off, so that
# structlog.testing.capture_logs sees loggers first used before it (set before create_app).
CACHE_LOGGERS = True


def configure_logging(level: str = "info", json: bool = True) -> None:
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact,
        structlog.processors.format_exc_info,
    ]
    processors.append(
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=CACHE_LOGGERS,
    )


class Metrics:
    """One registry per app, so several apps in one test process do not collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "dutyline_requests",
            "API requests by operation and result code",
            ["operation", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "dutyline_request_duration_seconds",
            "API request latency by operation",
            ["operation"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=self.registry,
        )
        self.jobs = Counter(
            "dutyline_jobs",
            "Durable jobs finished by kind and outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.enrichment_lookups = Counter(
            "dutyline_enrichment_api_lookups",
            "Calls to mapping APIs at ingest, by outcome (ok, failed)",
            ["outcome"],
            registry=self.registry,
        )
        self.outbound_retries = Counter(
            "dutyline_outbound_retries",
            "Outbound HTTP requests sent again, by reason (connect_error, http_503...)",
            ["reason"],
            registry=self.registry,
        )

    def count_enrichment_lookup(self, outcome: str) -> None:
        self.enrichment_lookups.labels(outcome=outcome).inc()

    def count_outbound_retry(self, reason: str) -> None:
        self.outbound_retries.labels(reason=reason).inc()
