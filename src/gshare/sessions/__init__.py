"""Interactive sessions: where each runs, what its operator last reported, who may enter it."""
