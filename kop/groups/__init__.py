"""Consumer groups: the pure coordinator, its durable store (the offsets topic)
and the subscription mirror."""
