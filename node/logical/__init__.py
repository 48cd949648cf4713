"""Values that cross the boundary between the HTTP edge and the core."""

from node.logical.request import Operation, Request, RequestAuth
from node.logical.response import Auth, Login, Response, WrapInfo

__all__ = ["Auth", "Login", "Operation", "Request", "RequestAuth", "Response", "WrapInfo"]
