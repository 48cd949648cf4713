"""Fault injection against Coffer clusters.

``chaos.checker`` is shared: it checks a recorded history of operations (lost
acknowledged writes, reads going back, unavailability). Runners live in their own
subpackages; ``chaos.compose`` drives the Docker compose cluster in ``deploy/``.
"""
