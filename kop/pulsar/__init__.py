"""The only code that talks to Pulsar: client session, admin REST, naming."""
