"""/alert/list, /alert/info, /alert/event/list: reading alerts and their raw events."""
