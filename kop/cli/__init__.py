"""The `kop` command: `main` is the entry point, one module per command group."""
