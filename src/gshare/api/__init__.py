"""The HTTP edge: the app factory, router wiring, error handling and the served console."""
