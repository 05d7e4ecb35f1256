"""Transactions: the coordinator's rules (`state`), and later its durable store and
the markers it writes into partition logs."""
