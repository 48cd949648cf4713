"""The userpass auth method: users with a password and the settings of their tokens."""

from node.auth.userpass.backend import UserpassBackend

__all__ = ["UserpassBackend"]
