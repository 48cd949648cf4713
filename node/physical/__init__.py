"""Physical storage: untrusted bytes under the barrier.

Backends see only ciphertext. They implement ``sdk.physical.PhysicalBackend``
(the interface lives in ``sdk`` so ``consensus`` implements it without importing
``node``): get, put, delete, list one level of a prefix, and ``commit`` — an
atomic multi-key transaction whose per-key revision checks let read-modify-write
logic run without locks held across awaits.
"""
