"""SASL, whole: the mechanisms kop accepts (PLAIN and OAUTHBEARER with Pulsar tokens,
SCRAM with users kept in Pulsar, the instances' own KOP-PEER), the per-connection
exchange (`session`), and the gate that holds a connection to its listener's rules
until it has signed in (`gatekeeper`). The server asks the gate; nothing else speaks
SASL."""
