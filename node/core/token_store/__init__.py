"""The token auth method (``auth/token/``): create, look up, renew, revoke, roles."""
