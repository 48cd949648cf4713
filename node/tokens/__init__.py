"""Client tokens: minting, salted-hash storage and lookup.

Token IDs are never stored: the store keeps an HMAC of each ID under a
per-cluster salt, so a storage dump cannot be replayed as credentials.
"""
