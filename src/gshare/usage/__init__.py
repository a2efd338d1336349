"""Usage and waste: GPU time, credits and idle time rolled up per hour and day, and reports."""
