"""Escalation (dispatch) rules and the escalation engine that pages people with them."""
