"""Members' own ways of being paged: chat handles and the channels per incident severity
that `by.follow_preference` follows."""
