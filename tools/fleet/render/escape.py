"""Escaping for the languages of the rendered files: the second line of defence.

The inventory's types (:mod:`fleet.inventory.types`) already refuse every value that could
add a directive or a command. These helpers make each renderer safe on its own too: a
value that its language cannot hold raises :class:`UnsafeValueError` (an internal error:
validation should have refused it) instead of being written.
"""

from __future__ import annotations

import re
from typing import Any

# Every rendered language here is line-based (dnsmasq, nginx, iPXE, GRUB, debconf,
# systemd, slurm.conf, chrony, deb822): a line break or any other control character in
# a value would start a new directive.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_GRUB_PLAIN = re.compile(r"[A-Za-z0-9._,:=/+@%-]+")
# iPXE has no quoting at all: a word is what lies between spaces, and ${...} is expanded.
_IPXE_WORD = re.compile(r"[A-Za-z0-9._,:;=/+@%?&#!~\[\]-]+")
_NGINX_WORD = re.compile(r"[A-Za-z0-9._/:+-]+")


class UnsafeValueError(ValueError):
    """A value that the target language cannot hold safely."""


def line(value: Any, what: str = "a value") -> str:
    """``value`` as text for a line-based config; refused if it holds a control character."""
    text = str(value)
    if text.isprintable():  # most values: no control character (all are unprintable)
        return text
    m = _CONTROL.search(text)
    if m:
        raise UnsafeValueError(f"{what} {text[:60]!r} holds the control character "
                               f"U+{ord(m.group()):04X}: it would start a new line")
    return text


def grub_word(value: str) -> str:
    """One word of a GRUB script: plain, or single-quoted (GRUB's quotes work as sh's)."""
    line(value, "a GRUB word")
    if _GRUB_PLAIN.fullmatch(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def grub_title(value: str) -> str:
    """Text inside a single-quoted GRUB string such as a menuentry title."""
    return line(value, "a GRUB title").replace("'", "'\\''")


def ipxe_word(value: str) -> str:
    """One word of an iPXE command line (iPXE cannot quote: refuse what it would split or
    expand)."""
    if not _IPXE_WORD.fullmatch(value):
        raise UnsafeValueError(f"{value[:60]!r} cannot be one word of an iPXE script "
                               "(white space, quotes, '$' or control characters)")
    return value


def ipxe_words(text: str) -> str:
    """A space-separated iPXE argument list, each word checked."""
    for word in text.split(" "):
        ipxe_word(word)
    return text


def nginx_word(value: str) -> str:
    """A bare nginx directive argument (no quotes, braces, ';', '$' or spaces)."""
    if not _NGINX_WORD.fullmatch(value):
        raise UnsafeValueError(f"{value[:60]!r} cannot be a bare nginx argument")
    return value


def debconf_value(value: str) -> str:
    """A preseed answer: the rest of its line, so any line break would add a question."""
    return line(value, "a preseed answer")


# XML 1.0 has no way to write these at all (not even as character references).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
# '&' first: the others bring their own. One str.replace each (C; where nothing is found,
# a search): str.translate looks every character up in a dict, 6x the time.
_XML_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"),
                ("'", "&apos;"))


def _xml_escaped(text: str) -> str:
    for markup, reference in _XML_ESCAPES:
        text = text.replace(markup, reference)
    return text


def xml_text(value: Any, what: str = "a value") -> str:
    """``value`` as XML character data or a double- or single-quoted attribute value:
    markup characters escaped, one that XML cannot hold refused, and line breaks and other
    C0/C1 controls refused as in every other rendered language (:func:`line`)."""
    text = str(value)
    if text.isprintable():  # most values: nothing XML cannot hold, no control character
        return _xml_escaped(text)
    m = _XML_ILLEGAL.search(text)
    if m:
        raise UnsafeValueError(f"{what} {text[:60]!r} holds U+{ord(m.group()):04X}, which "
                               "XML cannot hold")
    return _xml_escaped(line(text, what))
