"""The BYOC world of tests/aisre/test_runners.py (app served on loopback, fake LLM, fake
clock) for the security tests that connect real runner peers."""

from tests.aisre.test_runners import clock, llm, llm_settings, w  # noqa: F401
