"""Custom actions: a member runs a channel's custom-action integration on one of its
incidents, which POSTs the incident to the action's webhook, signed, and records the answer
in the incident's feed (`i_custom`)."""
