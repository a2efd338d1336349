"""Shared building blocks: settings, database, errors, clock, ids, pagination."""
