"""Operations: admin HTTP (health, readiness, metrics) and metric definitions."""
