"""The audit log: who did what to which target, in which scope, and how it ended."""
