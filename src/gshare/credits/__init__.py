"""Credits: wallets, a double-entry ledger, holds, monthly grants and refills."""
