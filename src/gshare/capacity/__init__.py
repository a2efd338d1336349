"""Capacity: GPU inventory, tiers, pools, MIG layouts, policies, placement and the queue."""
