#!/usr/bin/python3
"""Docker HEALTHCHECK for a Coffer node: healthy means initialised, unsealed and serving.

``GET /v1/sys/health?standbyok=true&perfstandbyok=true`` answers 200 for the active
node and for (performance) standbys, 501 before init and 503 while sealed, so a node
that restarted sealed shows as unhealthy in ``docker ps`` until it is unsealed.
The load balancer makes its own, role-aware checks. Standard library only.

COFFER_HEALTH_URL overrides the URL; for https, COFFER_CACERT names the CA bundle.
"""

import os
import ssl
import sys
import urllib.error
import urllib.request

DEFAULT = "http://127.0.0.1:8200/v1/sys/health?standbyok=true&perfstandbyok=true"


def main() -> int:
    url = os.environ.get("COFFER_HEALTH_URL") or DEFAULT
    context = None
    if url.startswith("https://"):
        context = ssl.create_default_context(cafile=os.environ.get("COFFER_CACERT") or None)
        context.check_hostname = False  # 127.0.0.1 is rarely in the node's certificate
    try:
        with urllib.request.urlopen(url, timeout=2.5, context=context) as reply:  # noqa: S310
            status = reply.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        print(f"unhealthy: {exc}")
        return 1
    print(f"sys/health: {status}")
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
