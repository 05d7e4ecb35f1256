"""KIP-932 share groups on Pulsar Shared subscriptions (D27): the held records of a
share-partition, and (to come) the coordinator and the fetch side."""
