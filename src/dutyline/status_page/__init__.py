"""Status pages: pages and their structure, changes (incidents and maintenances) with their
timelines, subscribers and their notifications, the public web pages, and migration from
Atlassian Statuspage."""
