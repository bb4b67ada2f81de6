"""Reading and decoding source files once, honouring PEP 263 coding declarations and BOMs."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_CODING_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT_RE = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")
# Python's own line breaks: str.splitlines() also splits on \f, \v, \x1c-\x1e, \x85, U+2028/9 and
# would shift line numbers.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SourceDecodeError(ValueError):
    """The bytes are not text Python can read; `line` is where the problem is (1-based)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True, slots=True)
class DecodedSource:
    """Decoded source text (BOM removed, newlines kept as written) and the encoding used."""

    text: str
    encoding: str


def source_lines(text: str) -> list[str]:
    """Split decoded source text into physical lines the way Python's tokenizer numbers them."""
    return _LINE_BREAK.split(text)


def declared_encoding(data: bytes) -> str | None:
    """Return the PEP 263 encoding declared in the first two lines, or None."""
    lines = data.split(b"\n", 2)[:2]
    for index, line in enumerate(lines):
        match = _CODING_RE.match(line)
        if match:
            return match.group(1).decode("ascii")
        if index == 0 and not _BLANK_OR_COMMENT_RE.match(line):
            return None
    return None


def decode_source(data: bytes) -> DecodedSource:
    """Decode file bytes the way CPython does; raise SourceDecodeError with a clear message otherwise."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise SourceDecodeError("binary file: source contains a NUL byte", line)
    has_bom = data.startswith(codecs.BOM_UTF8)
    if has_bom:
        data = data[len(codecs.BOM_UTF8) :]
    encoding = declared_encoding(data) or "utf-8"
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise SourceDecodeError(f"unknown encoding {encoding!r} in coding declaration") from None
    if not getattr(codec, "_is_text_encoding", True):  # rot13, hex, base64, zlib: CPython refuses them too
        raise SourceDecodeError(f"encoding problem: {encoding!r} is not a text encoding")
    if has_bom and codec.name != "utf-8":
        raise SourceDecodeError(f"encoding problem: {encoding} with a UTF-8 BOM")
    try:
        text = data.decode(codec.name)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceDecodeError(
            f"not valid {codec.name} (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8 or declare its encoding (PEP 263)",
            line,
        ) from None
    except (UnicodeError, LookupError) as exc:  # codecs such as 'undefined' or 'punycode' fail otherwise
        raise SourceDecodeError(f"encoding problem: cannot decode as {codec.name}: {exc}") from None
    return DecodedSource(text=text, encoding=codec.name)


def encode_source(text: str) -> bytes:
    """Bytes that :func:`decode_source` turns back into `text`: the text in its declared encoding
    (UTF-8 when none is declared, or when the declared one cannot encode it)."""
    try:
        return text.encode(declared_encoding(text.encode("utf-8", "surrogatepass")) or "utf-8")
    except (LookupError, UnicodeError):
        return text.encode("utf-8", "surrogatepass")
