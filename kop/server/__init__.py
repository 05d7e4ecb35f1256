"""asyncio transport: listeners and one Connection per socket."""
