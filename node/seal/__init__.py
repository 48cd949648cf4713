"""The seal: how the root key is protected at rest.

Shamir (the default) splits an unseal key into shares; the unseal key
decrypts the stored root key, which decrypts the barrier's keyring. The
HSM-backed seal arrives later behind the same ``Seal`` protocol.
"""
