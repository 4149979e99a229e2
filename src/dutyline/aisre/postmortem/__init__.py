"""The model's draft of a post-mortem: the incident domain's drafting job, handled here."""
