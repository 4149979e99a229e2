"""Granting and revoking one role to several members (/role/member/grant|revoke)."""
