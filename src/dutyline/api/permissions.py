"""The permission catalog (the reference's permission names and scopes). Ids are stable:
clients store them in roles.

Where the reference names a permission's id we use it, so a role written by an existing tool
means the same here: 501 is "Templates Read" (the reference's PermissionItem example) and 502
its manage pair (granted beside 501 in the reference's role example). Migration 0006
renumbered the grants stored under the earlier ids (206, 207)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Permission:
    id: int
    name: str
    scope: str
    permission_class: str
    permission_type: str  # "read" or "manage"
    description: str


ACCOUNT_MANAGE = "account_manage"
MCP_MANAGE = "mcp_manage"
AGENT_MANAGE = "agent_manage"
# Using a BYOC runner: it runs commands inside the customer's network, so binding an automation
# rule or an MCP server to a worknode, and running such a rule, needs this (or account_manage,
# which manages the worknodes and implies it). The reference names no such permission.
ENVIRONMENT_USE = "environment_use"
STATUS_PAGE_MANAGE = "status_page_manage"
STATUS_PAGE_EVENT_MANAGE = "status_page_event_manage"
INCIDENT_MANAGE = "incident_manage"
CHANNEL_VIEW = "channel_view"
CHANNEL_MANAGE = "channel_manage"
TEMPLATE_VIEW = "template_view"
TEMPLATE_MANAGE = "template_manage"
INTEGRATION_VIEW = "integration_view"
INTEGRATION_MANAGE = "integration_manage"
MAPPING_DATA_VIEW = "mapping_data_view"
MAPPING_DATA_MANAGE = "mapping_data_manage"
ALERT_RULE_MANAGE = "alert_rule_manage"
# The reference's "Schedules Read" / "Schedules Manage" (on-call).
SCHEDULE_VIEW = "schedule_view"
SCHEDULE_MANAGE = "schedule_manage"
# The reference's "Calendars Manage" (on-call): service calendars and their events. Reading
# them needs no permission (the reference: any valid app_key).
CALENDAR_MANAGE = "calendar_manage"

CATALOG: tuple[Permission, ...] = (
    Permission(1, ACCOUNT_MANAGE, "organization", "Organization", "manage",
               "Manage members, roles, teams, app keys and read the audit log"),
    Permission(101, MCP_MANAGE, "ai-sre", "AI SRE", "manage", "Manage MCP servers"),
    Permission(102, AGENT_MANAGE, "ai-sre", "AI SRE", "manage", "Manage A2A agents"),
    Permission(103, ENVIRONMENT_USE, "ai-sre", "AI SRE", "manage",
               "Use BYOC runners: bind automation rules and MCP servers to a worknode and "
               "run those rules"),
    Permission(201, STATUS_PAGE_MANAGE, "on-call", "On-call", "manage", "Manage status pages"),
    Permission(202, STATUS_PAGE_EVENT_MANAGE, "on-call", "On-call", "manage",
               "Manage status page events"),
    Permission(203, INCIDENT_MANAGE, "on-call", "On-call", "manage", "Manage incidents"),
    Permission(204, CHANNEL_VIEW, "on-call", "On-call", "read", "View channels"),
    Permission(205, CHANNEL_MANAGE, "on-call", "On-call", "manage", "Manage channels"),
    Permission(501, TEMPLATE_VIEW, "on-call", "On-call", "read", "View notification templates"),
    Permission(502, TEMPLATE_MANAGE, "on-call", "On-call", "manage",
               "Manage notification templates"),
    Permission(208, INTEGRATION_VIEW, "on-call", "On-call", "read", "View the integration center"),
    Permission(209, INTEGRATION_MANAGE, "on-call", "On-call", "manage",
               "Manage the integration center"),
    Permission(210, MAPPING_DATA_VIEW, "on-call", "On-call", "read", "View mapping data"),
    Permission(211, MAPPING_DATA_MANAGE, "on-call", "On-call", "manage", "Manage mapping data"),
    Permission(220, SCHEDULE_VIEW, "on-call", "On-call", "read", "View on-call schedules"),
    Permission(221, SCHEDULE_MANAGE, "on-call", "On-call", "manage", "Manage on-call schedules"),
    Permission(222, CALENDAR_MANAGE, "on-call", "On-call", "manage",
               "Manage service calendars and their holidays"),
    Permission(301, ALERT_RULE_MANAGE, "monit", "Monitors", "manage", "Manage alert rules"),
)

BY_ID: dict[int, Permission] = {p.id: p for p in CATALOG}
BY_NAME: dict[str, Permission] = {p.name: p for p in CATALOG}
ALL_IDS: frozenset[int] = frozenset(BY_ID)

# "Manage" implies "view": whoever may change a thing may read it; managing the account
# implies using its worknodes.
IMPLIES: dict[str, str] = {
    ACCOUNT_MANAGE: ENVIRONMENT_USE,
    CHANNEL_MANAGE: CHANNEL_VIEW,
    TEMPLATE_MANAGE: TEMPLATE_VIEW,
    INTEGRATION_MANAGE: INTEGRATION_VIEW,
    MAPPING_DATA_MANAGE: MAPPING_DATA_VIEW,
    SCHEDULE_MANAGE: SCHEDULE_VIEW,
}

# Built-in roles: (builtin kind, display name, permission ids). Owner and Admin hold all.
MEMBER_DEFAULT = frozenset(
    BY_NAME[n].id for n in (CHANNEL_VIEW, TEMPLATE_VIEW, MAPPING_DATA_VIEW, INTEGRATION_VIEW)
)
BUILTIN_ROLES: tuple[tuple[str, str, str, frozenset[int]], ...] = (
    ("owner", "Owner", "The account owner: every permission", ALL_IDS),
    ("admin", "Admin", "Administrators: every permission", ALL_IDS),
    ("member", "Member", "Read-only access to channels, templates and integrations",
     MEMBER_DEFAULT),
)


def expand(permission_ids: set[int] | frozenset[int]) -> frozenset[str]:
    """Permission names a set of ids grants, with the implied view permissions."""
    names = {BY_ID[i].name for i in permission_ids if i in BY_ID}
    names.update(IMPLIES[n] for n in list(names) if n in IMPLIES)
    return frozenset(names)


# The role the console invites with by default. Whoever is paged must be able to answer the
# page: acknowledge, resolve, comment on, snooze and reassign the incidents of the channels
# they can see (visibility is the channel's, not the role's), and read who is on call. It is
# an ordinary custom role of the account, made the first time an invitation picks it
# (role.service.responder_role): the contract's built-in roles stay Owner, Admin and the
# read-only Member, which is still what /member/invite gives when no role is named.
RESPONDER_NAME = "Responder"
RESPONDER_DESCRIPTION = ("Works incidents in the channels they can see: acknowledge, resolve, "
                         "comment, snooze, reassign; reads schedules, templates and "
                         "integrations")
RESPONDER_DEFAULT = MEMBER_DEFAULT | frozenset(
    BY_NAME[n].id for n in (INCIDENT_MANAGE, SCHEDULE_VIEW)
)
