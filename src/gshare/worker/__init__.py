"""The worker: a plain asyncio process of periodic loops, each calling domain tasks."""
