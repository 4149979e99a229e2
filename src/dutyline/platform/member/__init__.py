"""Members (persons) of an account: profiles, invitations, deletion and role assignment."""
