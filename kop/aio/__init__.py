"""Small asyncio helpers every floor may use (the bottom floor: imports nothing of kop)."""
