"""Routes: a shared integration sending alerts to channels by filters."""
