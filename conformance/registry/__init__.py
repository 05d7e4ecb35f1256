"""The Schema Registry tier (`python -m conformance --registry`): the same REST scenarios
against kop's registry and a reference Confluent-compatible registry (Apicurio Registry
in its Confluent API mode), a cell per scenario, written to
docs/compatibility-registry.md."""
