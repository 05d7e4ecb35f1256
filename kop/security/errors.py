"""Why an authentication failed: logged by kop, never told to the client."""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """The client's credentials were refused. The message is for kop's log only: the
    client is told `SASL_AUTHENTICATION_FAILED` and nothing of which part was wrong."""


class SecurityConfigError(ValueError):
    """Key material or a security setting that cannot work; said at start."""
