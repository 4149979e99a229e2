"""Domain-free helpers: ids, clock, and the like."""
