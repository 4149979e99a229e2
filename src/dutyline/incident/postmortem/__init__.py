"""Post-mortems: the report written after closed incidents (reference PostMortemItem)."""
