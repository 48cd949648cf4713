"""The seal: how the root key is protected at rest.

Shamir (the default) splits an unseal key into shares; the unseal key
decrypts the stored root key, which decrypts the barrier's keyring. The
PKCS#11 seal stores the root key encrypted by an HSM key and unseals by
itself; its operators hold recovery keys. Both implement ``base.Seal``.
"""
