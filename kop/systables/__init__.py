"""kop's own state in Pulsar system topics: keyed, compacted tables each written by one
instance at a time (offsets, transactions), and the state topics' mutual memory."""
