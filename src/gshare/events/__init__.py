"""Events between processes: PostgreSQL NOTIFY inside transactions, LISTEN in each process."""
