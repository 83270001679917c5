"""Text files as users write them: grammars, phrase lists, transcripts, recipes and manifests.

Windows editors start UTF-8 files with a byte-order mark (Notepad did by default until 2019), Windows
PowerShell's `>` writes UTF-16, and an older editor saves "café" as one cp1252 byte. Read with
Python's default, the mark became the first word's first character ("\\ufeff#JSGF" is no header, so a
JSGF file was "expected a rule"), UTF-16 was unreadable and "café" a replacement character that no
engine says. Every file a user hands seqx is read here, so each of them reads the same way.
"""

from __future__ import annotations

import codecs
from pathlib import Path

_MARKS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_text(data: bytes) -> str:
    """The text of a file's bytes: by its byte-order mark, else UTF-8, else cp1252 (Windows' "ANSI")."""
    for mark, encoding in _MARKS:
        if data.startswith(mark):
            return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def read_text_file(path: str | Path) -> str:
    """`Path.read_text` for a file a user wrote: a byte-order mark dropped, line ends made "\\n"."""
    return decode_text(Path(path).read_bytes()).replace("\r\n", "\n").replace("\r", "\n")
