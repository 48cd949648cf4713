"""The identity-provider auth method: logins checked against an Okta-compatible
provider's authn API, with locally mapped users and groups granting policies."""
