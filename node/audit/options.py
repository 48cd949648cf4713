"""A device's ``options``: which are known, their defaults, and their typed values.

Options arrive as the reference takes them (a map of strings) and are stored
as given, after checking, so ``sys/audit`` lists what the operator wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from logging.handlers import SysLogHandler
from typing import Any

from node.framework.fields import parse_duration
from sdk.errors import InvalidRequestError

__all__ = ["DEVICE_TYPES", "FormatOptions", "check_options", "parse_bool"]

#: The options every device type takes.
_COMMON = frozenset({"format", "prefix", "hmac_accessor", "log_raw", "elide_list_responses"})
_BY_TYPE: dict[str, frozenset[str]] = {
    "file": frozenset({"file_path", "path", "mode"}),
    "socket": frozenset({"address", "socket_type", "write_timeout"}),
    # ``address`` is Coffer's: the syslog socket (default /dev/log); the reference has none.
    "syslog": frozenset({"facility", "tag", "address"}),
}
DEVICE_TYPES = tuple(_BY_TYPE)
_FORMATS = ("json", "jsonx")
_SOCKET_TYPES = ("tcp", "udp", "unix")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_bool(options: dict[str, str], name: str, default: bool) -> bool:
    """Go's ``strconv.ParseBool``, as the reference reads these options."""
    value = options.get(name)
    if value is None or value == "":
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InvalidRequestError(f"unable to parse '{name}': invalid boolean {value!r}")


@dataclass(frozen=True, slots=True)
class FormatOptions:
    """How a device writes its entries (the options every type shares)."""

    format: str = "json"
    prefix: str = ""
    hmac_accessor: bool = True
    log_raw: bool = False
    elide_list_responses: bool = False

    @classmethod
    def from_options(cls, options: dict[str, str]) -> FormatOptions:
        return cls(
            format=options.get("format") or "json",
            prefix=options.get("prefix", ""),
            hmac_accessor=parse_bool(options, "hmac_accessor", True),
            log_raw=parse_bool(options, "log_raw", False),
            elide_list_responses=parse_bool(options, "elide_list_responses", False),
        )


def check_options(type_: str, raw: dict[str, Any]) -> dict[str, str]:
    """The options of a new device, as strings; a 400 for anything unknown or invalid."""
    if type_ not in _BY_TYPE:
        raise InvalidRequestError(f"unknown backend type: {type_!r}")
    options = {
        str(k): "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in raw.items()
    }
    unknown = sorted(set(options) - _COMMON - _BY_TYPE[type_])
    if unknown:
        raise InvalidRequestError(f"unknown options for a {type_} audit device: {unknown}")
    if (options.get("format") or "json") not in _FORMATS:
        raise InvalidRequestError(f"unknown format {options['format']!r}: use json or jsonx")
    FormatOptions.from_options(options)  # the booleans parse
    if type_ == "file":
        if "path" in options and "file_path" not in options:
            options["file_path"] = options.pop("path")  # the reference's older name
        if not options.get("file_path"):
            raise InvalidRequestError("file_path is required")
        mode = options.get("mode", "")
        try:
            if mode and not 0 <= int(mode, 8) <= 0o777:
                raise ValueError(mode)
        except ValueError:
            raise InvalidRequestError(f"invalid mode {mode!r}: an octal permission") from None
    elif type_ == "socket":
        if not options.get("address"):
            raise InvalidRequestError("address is required")
        socket_type = options.get("socket_type") or "tcp"
        if socket_type not in _SOCKET_TYPES:
            raise InvalidRequestError("socket_type must be tcp, udp or unix")
        port = options["address"].rpartition(":")[2]
        if socket_type != "unix" and not (port.isdigit() and 0 < int(port) < 65536):
            raise InvalidRequestError("address must be host:port for a tcp or udp socket")
        timeout = options.get("write_timeout")
        if timeout and parse_duration(timeout, "write_timeout") <= 0:
            raise InvalidRequestError("write_timeout must be positive")
    elif (options.get("facility") or "AUTH").lower() not in SysLogHandler.facility_names:
        raise InvalidRequestError(f"unknown syslog facility {options['facility']!r}")
    return options
