"""The YAML parser's errors for the mistakes people make most, in plain words.

PyYAML (libyaml) says "found character that cannot start any token" for a tab and
"mapping values are not allowed here" for a line indented too far; this module looks at the
text around the parser's mark and says what is wrong there, where, and how to fix it. An
error it does not recognize keeps the parser's words.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple


class Words(NamedTuple):
    """What to say about a syntax error: where (1-based), what, and how to fix it."""

    line: int
    col: int
    message: str
    hint: str | None = None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _key_col(line: str) -> int:
    """0-based column where the line's content starts, after any `- ` list markers."""
    col = _indent(line)
    while line.startswith("- ", col) or line[col:] == "-":
        col += 2
        while col < len(line) and line[col] == " ":
            col += 1
    return col


def _spaces(n: int) -> str:
    return f"{n} space" if n == 1 else f"{n} spaces"


def _content(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("#")


def _above(lines: list[str], line: int) -> int | None:
    """0-based index of the nearest line above ``line`` (0-based) with content, or None."""
    for i in range(line - 1, -1, -1):
        if _content(lines[i]):
            return i
    return None


def _word(line: str, col: int) -> str:
    """The key written at ``col`` (up to its colon), for a message."""
    text = line[col:].split(":", 1)[0].strip()
    return text[:40]


def _tab(lines: list[str], line: int, col: int) -> Words | None:
    row = lines[line] if line < len(lines) else ""
    at = col if col < len(row) and row[col] == "\t" else row.find("\t")
    if at < 0:
        return None
    return Words(line + 1, at + 1, "a tab: YAML indents with spaces only, and a tab here "
                 "cannot be read", "replace the tab with spaces, as many as the lines "
                 "around it use")


def _indented_too_far(lines: list[str], line: int) -> Words | None:
    """`key: value` then a line indented further: YAML reads it as part of that value."""
    row = lines[line]
    up = _above(lines, line)
    if up is None:
        return None
    prev = lines[up]
    col, pcol = _key_col(row), _key_col(prev)
    if col <= pcol:
        return None
    key, pkey = _word(row, col), _word(prev, pcol)
    up2 = _above(lines, up)
    if up2 is not None and _key_col(lines[up2]) == col:  # the line between them moved left
        return Words(up + 1, pcol + 1, f"`{pkey}:` is indented {_spaces(pcol)}, less than "
                     f"the lines around it (lines {up2 + 1} and {line + 1}, {_spaces(col)})",
                     f"indent it {_spaces(col)}, like `{_word(lines[up2], col)}:` above it")
    return Words(line + 1, col + 1, f"`{key}:` is indented more than `{pkey}:` on line "
                 f"{up + 1} above it, whose value is already written, so YAML reads it as "
                 "part of that value", f"indent `{key}:` {_spaces(pcol)}, like `{pkey}:`, if it "
                 f"is a field beside it; a field of `{pkey}` goes on lines of its own under "
                 f"`{pkey}:`")


def _levels(lines: list[str], line: int) -> list[int]:
    """The columns a line below ``line - 1`` may start at: that line's, and each lower one
    of the keys that enclose it."""
    levels: list[int] = []
    for i in range(line - 1, -1, -1):
        if _content(lines[i]):
            col = _key_col(lines[i])
            if not levels or col < levels[-1]:
                levels.append(col)
            if col == 0:
                break
    return sorted(levels)


def _step(lines: list[str]) -> int:
    """The file's usual indent of a block under its key (2 where none shows)."""
    seen: dict[int, int] = {}
    rows = [r for r in lines if _content(r)]
    for key, child in itertools.pairwise(rows):
        if key.split("#", 1)[0].rstrip().endswith(":"):
            step = _key_col(child) - _key_col(key)
            if step > 0:
                seen[step] = seen.get(step, 0) + 1
    return max(seen, key=lambda k: (seen[k], -k)) if seen else 2


def _moved_above(lines: list[str], line: int) -> Words | None:
    """The line above ``line`` that moved, where one did: a line indented less than those
    before and after it (its own lines fit the file's indent once it moves back), or the
    first line of a block indented unlike the rest of it."""
    col = _key_col(lines[line])
    ups = [i for i in range(line - 1, -1, -1) if _content(lines[i])]
    step = _step(lines)
    return _left_between(lines, line, col, ups, step) or _first_of_block(
        lines, line, col, ups, step)


def _left_between(lines: list[str], line: int, col: int, ups: list[int],
                  step: int) -> Words | None:
    for n, i in enumerate(ups):
        icol = _key_col(lines[i])
        if icol > col:
            continue
        if icol == col or n + 1 >= len(ups):
            return None
        # between two lines of the error's level: the line right above it is one of them
        # (a key that ends a deeper block, as `nodes:` after compute's, did not move: the
        # first line of its own block did, and _first_of_block says so)
        above = ups[n + 1]
        if _key_col(lines[above]) != col:
            return None
        if n > 0 and _key_col(lines[ups[n - 1]]) - col != step:
            return None  # its own lines would not fit under it moved back
        mcol = icol
        return Words(i + 1, mcol + 1, f"`{_word(lines[i], mcol)}:` is indented "
                     f"{_spaces(mcol)}, less than the lines around it (lines {above + 1} and "
                     f"{line + 1}, {_spaces(col)})", f"indent it {_spaces(col)}, like "
                     f"`{_word(lines[above], col)}:` on line {above + 1}")
    return None


def _first_of_block(lines: list[str], line: int, col: int, ups: list[int],
                    step: int) -> Words | None:
    if len(ups) < 2:
        return None
    up, parent = ups[0], ups[1]
    ucol, pcol = _key_col(lines[up]), _key_col(lines[parent])
    if not (pcol < col < ucol and ucol - pcol != step and col - pcol == step):
        return None
    key = _word(lines[up], ucol)
    return Words(up + 1, ucol + 1, f"`{key}:` is indented {_spaces(ucol)}, the lines after "
                 f"it {_spaces(col)}: YAML takes a block's indentation from its first line",
                 f"indent `{key}:` {_spaces(col)}, like `{_word(lines[line], col)}:` on line "
                 f"{line + 1}")


def _lines_up_with_nothing(lines: list[str], line: int) -> Words | None:
    row = lines[line]
    if row.lstrip(" ").startswith("-"):
        col = _indent(row)
        dashes = sorted({_indent(r) for r in lines[:line] if r.lstrip(" ").startswith("-")})
        if not dashes or col in dashes:
            return Words(line + 1, col + 1, "a list item among the keys of a mapping: YAML "
                         "cannot mix `key: value` lines and `- item` lines at one level",
                         "put the list under a key of its own (`key:` then `  - item`), or "
                         "indent it under the key it belongs to")
        what, levels = "list item", dashes
    else:
        moved = _moved_above(lines, line)
        if moved is not None:
            return moved
        col = _key_col(row)
        what, levels = f"`{_word(row, col)}:`", [c for c in _levels(lines, line) if c != col]
    if not levels:
        return None
    shown = " or ".join(str(c) for c in levels)
    return Words(line + 1, col + 1, f"this {what} is indented {_spaces(col)}, which lines up "
                 "with nothing above it", f"indent it {shown} spaces, like the lines it "
                 "belongs with")


def plain(text: str, line: int, col: int, problem: str) -> Words | None:
    """Plain words for the parser's ``problem`` at 0-based ``line``/``col`` of ``text``,
    or None where this module has nothing better to say."""
    lines = text.splitlines()
    row = lines[line] if line < len(lines) else ""
    if "tab" in problem or (col < len(row) and row[col] == "\t") or (
            "cannot start any token" in problem and "\t" in row[:col + 1]):
        found = _tab(lines, line, col)
        if found is not None:
            return found
    if line >= len(lines):
        return None
    if problem.startswith("mapping values are not allowed"):
        return _indented_too_far(lines, line) or Words(
            line + 1, col + 1, "a second `: ` on one line: YAML reads `key: value` once per "
            "line", "quote the value if it holds ': ' (key: 'a: b'), or put the second key "
            "on a line of its own")
    if problem == "did not find expected key" or problem.startswith("expected <block end>"):
        return _lines_up_with_nothing(lines, line)
    return None
