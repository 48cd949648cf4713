"""Container chaos against the compose cluster in ``deploy/compose.yaml``.

``python -m chaos.compose SCENARIO...`` (see ``__main__``); the scenarios are in
``chaos.compose.scenarios`` and the client load in ``chaos.compose.workload``.
"""
