"""Strict types for inventory values that reach a root-run config or command.

Every value here ends up in a Salt state, slurm.conf, a systemd unit, chrony, iPXE, GRUB,
a preseed, dnsmasq or nginx, often unquoted. So each type admits only what its meaning
needs: no control characters anywhere (a newline would add a directive), and for paths,
URLs, versions, names and time limits only the characters of their own grammar. The
renderers escape for their own language as well; these types are the first line.
"""

from __future__ import annotations

import posixpath
import re
from ipaddress import AddressValueError, IPv4Address
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, StringConstraints

from fleet.problems import short

# C0 and C1 controls, DEL, Unicode line/paragraph separators, BOM and the bidirectional
# overrides (text that reads differently from what it is).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069]")

MAX_TEXT = 200


def no_control(value: str) -> str:
    """Text without control characters (no line breaks, NUL, escapes, bidi overrides)."""
    m = _CONTROL.search(value)
    if m:
        raise ValueError(f"{short(value)} contains the control character "
                         f"U+{ord(m.group()):04X} at offset {m.start()}")
    return value


Text = Annotated[str, StringConstraints(max_length=MAX_TEXT), AfterValidator(no_control)]
"""Free text (a purpose, a comment, a model name): anything printable on one line."""


# --- host and domain names (RFC 1123) ---------------------------------------------------

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
_DOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
# Words that mean something to Salt's compound matcher (`salt -C`): a minion with such an
# id could not be targeted, or would change what a compound target selects. The forms
# with '@' (G@, E@, P@, L@, I@, J@, S@, R@, N@) cannot occur: '@' is not allowed.
SALT_WORDS = frozenset({"and", "or", "not"})


def host_name(value: str) -> str:
    """An RFC 1123 host name (a minion id): a-z, 0-9 and '-', starting with a letter, not
    ending with '-', at most 63 characters; never `and`, `or` or `not`."""
    if not _HOST.fullmatch(value):
        raise ValueError(f"{short(value)} is not a host name: lower-case letters, digits "
                         "and '-', starting with a letter, not ending with '-', at most 63 "
                         "characters (RFC 1123)")
    if value in SALT_WORDS:
        raise ValueError(f"{value!r} is a word of Salt's compound matcher and cannot be a "
                         "minion id")
    return value


def domain_name(value: str) -> str:
    """An RFC 1123 domain name: dot-separated labels of a-z, 0-9 and '-'."""
    if len(value) > 253 or not _DOMAIN.fullmatch(value):
        raise ValueError(f"{short(value)} is not a domain name: dot-separated labels of "
                         "lower-case letters, digits and '-', none starting or ending with "
                         "'-', at most 63 characters each and 253 in all (RFC 1123)")
    return value


def _dotted_quad(text: str, problem: str) -> bool:
    """Whether ``text`` is digits and dots only, which must then be an IPv4 address
    (else ValueError ``problem``)."""
    if not re.fullmatch(r"[0-9.]+", text):
        return False
    try:
        IPv4Address(text)
    except AddressValueError:
        raise ValueError(problem) from None
    return True


def host_or_address(value: str) -> str:
    """An NTP server: a DNS name or an IPv4 address."""
    if _dotted_quad(value, f"{short(value)} is not an IPv4 address"):
        return value
    if len(value) > 253 or not re.fullmatch(rf"{_LABEL}(\.{_LABEL})*", value.lower()):
        raise ValueError(f"{short(value)} is neither a host name (RFC 1123) nor an IPv4 "
                         "address")
    return value


# --- paths ------------------------------------------------------------------------------

_SEGMENT = r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*|\.[A-Za-z0-9_+-][A-Za-z0-9._+-]*"
_ABS = re.compile(rf"(/({_SEGMENT}))+")
_REL = re.compile(rf"({_SEGMENT})(/({_SEGMENT}))*")
# Directories that a deployment (rsync --delete, file.directory, chown) must never be:
# the roots of the filesystem hierarchy and their well-known subdirectories.
SYSTEM_DIRS = frozenset({
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
    "/lost+found", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/snap",
    "/srv", "/sys", "/tmp", "/usr", "/var",
    "/usr/bin", "/usr/include", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec",
    "/usr/local", "/usr/local/bin", "/usr/local/lib", "/usr/local/sbin", "/usr/local/share",
    "/usr/sbin", "/usr/share", "/usr/src",
    "/var/backups", "/var/cache", "/var/lib", "/var/local", "/var/lock", "/var/log",
    "/var/mail", "/var/opt", "/var/run", "/var/spool", "/var/tmp", "/var/www",
    "/etc/salt", "/etc/ssh", "/etc/systemd", "/var/lib/dpkg", "/var/lib/apt",
})
MAX_PATH = 255


def _path_chars(value: str, what: str) -> None:
    if len(value) > MAX_PATH:
        raise ValueError(f"{short(value)} is longer than {MAX_PATH} characters")
    no_control(value)
    parts = value.strip("/").split("/")
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"{short(value)}: '.' and '..' are not allowed in {what}")


def abs_path(value: str) -> str:
    """An absolute, normalized path of plain characters (letters, digits, ._+-)."""
    _path_chars(value, "a path")
    if value == "/":
        raise ValueError("'/' is the root of the filesystem, never a deployment directory")
    if not value.startswith("/"):
        raise ValueError(f"{short(value)} is not an absolute path")
    if not _ABS.fullmatch(value) or posixpath.normpath(value) != value:
        raise ValueError(f"{short(value)} is not a normalized absolute path of letters, "
                         "digits and ._+- (no '//', no trailing '/', no spaces or quotes)")
    return value


def deploy_dir(value: str) -> str:
    """A directory that a state creates, owns, syncs into or deletes from."""
    abs_path(value)
    if value in SYSTEM_DIRS:
        raise ValueError(f"{value} is a system directory; use a directory of its own "
                         "below it")
    return value


def rel_path(value: str) -> str:
    """A path under the boot HTTP root: relative, normalized, plain characters."""
    _path_chars(value, "a path")
    if value.startswith("/"):
        raise ValueError(f"{short(value)} must be relative to the boot HTTP root (no "
                         "leading '/')")
    if not _REL.fullmatch(value):
        raise ValueError(f"{short(value)} is not a relative path of letters, digits and "
                         "._+- (no '//', no trailing '/', no spaces or quotes)")
    return value


# --- URLs -------------------------------------------------------------------------------

# RFC 3986 characters less those that a shell, iPXE, GRUB or Salt's Jinja would read
# (quotes, '$', ';', '(', ')', '*', '{', '}', '\\', '`', '<', '>', '|', '^').
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!&+,=%-]+")
MAX_URL = 2000


def url(value: str) -> str:
    """An http(s) URL with a host, no credentials, no white space, quotes, '$', ';' or
    control characters."""
    if not value:
        raise ValueError("an empty URL (an http(s) URL is needed here)")
    if len(value) > MAX_URL:
        raise ValueError(f"{short(value)} is longer than {MAX_URL} characters")
    no_control(value)
    if any(c.isspace() for c in value):
        raise ValueError(f"{short(value)} contains white space")
    if not _URL_CHARS.fullmatch(value):
        bad = next(c for c in value if not _URL_CHARS.fullmatch(c))
        raise ValueError(f"{short(value)}: {bad!r} is not allowed in a URL here "
                         "(percent-encode it)")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{short(value)} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{short(value)}: the scheme must be http or https")
    if not parts.hostname:
        raise ValueError(f"{short(value)} has no host")
    if "@" in parts.netloc:
        raise ValueError(f"{short(value)}: credentials do not belong in a URL of the "
                         "inventory")
    if port == 0:
        raise ValueError(f"{short(value)}: port 0 is not a port")
    host = parts.hostname
    if not host.startswith("[") and \
            not _dotted_quad(host, f"{short(value)}: {host} is not an IPv4 address"):
        domain_name(host)
    return value


def path_or_url(value: str) -> str:
    """An absolute path on the master, or an http(s) URL."""
    if value.startswith("/"):
        return abs_path(value)
    return url(value)


# --- versions, time limits, fingerprints, kernel arguments ------------------------------

NUMERIC_VERSION = r"^\d{1,6}(\.\d{1,6}){0,5}$"
PACKAGE_VERSION = r"^[0-9A-Za-z][0-9A-Za-z.+~-]{0,63}$"
# Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds; or INFINITE / UNLIMITED.
TIME_LIMIT = r"^(INFINITE|UNLIMITED|\d{1,9}(:\d{1,2}){0,2}|\d{1,6}-\d{1,2}(:\d{1,2}){0,2})$"
# salt-key -F: hex octets separated by ':' (md5: 16, sha256: 32)
FINGERPRINT = r"^[0-9a-f]{2}(:[0-9a-f]{2}){15,63}$"
KERNEL_ARG = r"^[A-Za-z0-9._,:=/+@-]{1,200}$"

NumericVersion = Annotated[str, StringConstraints(pattern=NUMERIC_VERSION)]
PackageVersion = Annotated[str, StringConstraints(pattern=PACKAGE_VERSION)]
TimeLimit = Annotated[str, StringConstraints(pattern=TIME_LIMIT)]
Fingerprint = Annotated[str, StringConstraints(pattern=FINGERPRINT)]
KernelArg = Annotated[str, StringConstraints(pattern=KERNEL_ARG)]
# IANA zone names: Etc/GMT+8, America/Argentina/Buenos_Aires, UTC
TIMEZONE = r"^[A-Za-z][A-Za-z0-9_+-]{0,29}(/[A-Za-z0-9_+-]{1,30}){0,2}$"
Timezone = Annotated[str, StringConstraints(pattern=TIMEZONE)]

# What a message says instead of a bare regular expression.
PATTERN_HINTS = {
    NUMERIC_VERSION: "expected a version of digits and dots such as 23.11",
    PACKAGE_VERSION: "expected a version of letters, digits and .+~- such as 1.2.3",
    TIME_LIMIT: "expected a Slurm time limit: INFINITE, UNLIMITED, minutes, "
                "[hours:]minutes:seconds or days-hours[:minutes[:seconds]]",
    FINGERPRINT: "expected the master's fingerprint as `salt-key -F master` prints it "
                 "(hex octets separated by ':')",
    KERNEL_ARG: "a kernel argument is one word of letters, digits and ._,:=/+@-",
    TIMEZONE: "expected a time zone name such as UTC or America/Los_Angeles",
}


# --- the checked types of the schema: each one's function above ------------------------

HostName = Annotated[str, AfterValidator(host_name)]
DomainName = Annotated[str, AfterValidator(domain_name)]
Server = Annotated[str, AfterValidator(host_or_address)]
AbsPath = Annotated[str, AfterValidator(abs_path)]
DeployDir = Annotated[str, AfterValidator(deploy_dir)]
RelPath = Annotated[str, AfterValidator(rel_path)]
Url = Annotated[str, AfterValidator(url)]
PathOrUrl = Annotated[str, AfterValidator(path_or_url)]
