"""Errors of the identity-provider method.

``UpstreamError`` is the 502 of SPEC.md ("a call to a third party failed"):
the provider was unreachable, too slow, or answered something unusable. It
lives here until ``sdk.errors`` grows a shared class for it.
"""

from __future__ import annotations

from sdk.errors import CofferError, InvalidRequestError

__all__ = ["LoginFailedError", "UpstreamError"]


class UpstreamError(CofferError):
    """The identity provider failed; the caller's credentials were not judged."""

    status = 502


class LoginFailedError(InvalidRequestError):
    """The provider judged the login and refused it (bad password, lock-out, MFA)."""
