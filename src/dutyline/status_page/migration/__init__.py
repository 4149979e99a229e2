"""Migration from Atlassian Statuspage: client, importer, job steps and operations."""
