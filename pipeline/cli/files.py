"""Many documents from the command line: a folder or several files as FILE, each processed in turn, a progress line
on a terminal, and where each result goes."""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator

from pipeline import unpack
from pipeline.unpack.members import OS_METADATA_HEAD, windows_device

# a folder's files opened as when named: each member of a ZIP, each invoice of a message a document of its own
CONTAINER_SUFFIXES = (".zip", ".eml", ".mbox")
DOCUMENT_SUFFIXES = (".xml", ".pdf") + CONTAINER_SUFFIXES
READ = "*.xml, *.pdf, *.eml, *.mbox or *.zip"  # DOCUMENT_SUFFIXES in words


def expand(paths: Iterable[Path]) -> list[Path]:
    """The files named, a folder's e-invoice files, e-mails and ZIPs (DOCUMENT_SUFFIXES, recursively, sorted) in
    their place; in a folder, what the operating system keeps beside documents (macOS's "._name") is left out."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
                          and not unpack.os_metadata(p.name, _head(p)))
        else:
            out.append(path)
    return out


def _head(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(OS_METADATA_HEAD)


def output_for(source: Path, output: Path | None, many: bool, suffix: str) -> Path | None:
    """Where a result goes: `output` itself for one document; for several, or when `output` is a folder that
    exists, each result goes into the folder, named after its source with `suffix` (None: stdout, one document
    only)."""
    if not many and not (output is not None and output.is_dir()):
        return output
    output.mkdir(parents=True, exist_ok=True)
    return output / (source.stem + suffix)


def progress(files: list[Path]) -> Iterator[Path]:
    """The files, with a `[n/total] name` line on stderr when it is a terminal and there are several."""
    show = len(files) > 1 and sys.stderr.isatty()
    for n, path in enumerate(files, start=1):
        if show:
            sys.stderr.write(f"\r\x1b[K[{n}/{len(files)}] {path.name[:60]}")
            sys.stderr.flush()
        yield path
    if show:
        sys.stderr.write("\r\x1b[K")


def is_archive(path: Path) -> bool:
    """A container of documents: a ZIP archive or an e-mail (.eml, .mbox), by its first bytes or its name (a file
    that cannot be read is not one: its reader names the error)."""
    try:
        with path.open("rb") as f:
            return unpack.kind(path.name, f.read(unpack.HEAD)) is not None
    except OSError:
        return False


def shown(path: Path | str) -> str:
    """A path as a document's name in results and reports: a file system name that is no UTF-8 (Python keeps its
    bytes as lone surrogates, which no JSON, HTML or UTF-8 output can carry) read as `unpack.name_text` reads it."""
    return unpack.name_text(os.fsencode(path))


_NAME_BYTES = 200  # of a file name made by `safe_name`: file systems take 255, and ".html" is added


def safe_name(name: str) -> str:
    """A document's name (a path, an archive member) as one file name in an output folder: no separators, no `..`,
    no Windows device name (`CON.xml` -> `_CON.xml`), at most _NAME_BYTES bytes. A document of a message is named
    by the message's date, sender, subject and Message-ID before its file name: 255 bytes were soon passed, and
    `--html-dir` ended the whole run with "File name too long". A longer name keeps its start and its end (the
    attachment's file name) around a digest of the whole, so that two long names never share one file."""
    flat = name.replace("\\", "/").strip("/").replace("/", "_").replace("..", "_") or "document"
    if windows_device(flat):
        flat = "_" + flat
    data = flat.encode("utf-8", "surrogatepass")
    if len(data) <= _NAME_BYTES:
        return flat
    digest = hashlib.sha256(data).hexdigest()[:12]
    end = data[-(_NAME_BYTES // 2):].decode("utf-8", "ignore")
    start = data[:_NAME_BYTES - len(end.encode("utf-8", "surrogatepass")) - len(digest) - 2].decode("utf-8", "ignore")
    return f"{start}~{digest}~{end}"


class Progress:
    """A `[done/total] name` line on stderr while results come in, when stderr is a terminal and there are several."""

    def __init__(self, total: int):
        self.total, self.done = total, 0
        self.show = total > 1 and sys.stderr.isatty()

    def step(self, name: str) -> None:
        self.done += 1
        if self.show:
            sys.stderr.write(f"\r\x1b[K[{self.done}/{self.total}] {name[-60:]}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.show:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def say_skipped(folder: Path, program: str) -> None:
    """A folder's files that are not read (not DOCUMENT_SUFFIXES), named on stderr: nothing is left out unsaid."""
    skipped = sorted(shown(p.relative_to(folder)) for p in folder.rglob("*")
                     if p.is_file() and p.suffix.lower() not in DOCUMENT_SUFFIXES)
    if skipped:
        listed = ", ".join(skipped[:10]) + (f", ... (+{len(skipped) - 10})" if len(skipped) > 10 else "")
        print(f"{program}: {shown(folder)}: skipped {len(skipped)} file{'' if len(skipped) == 1 else 's'} "
              f"that {'is' if len(skipped) == 1 else 'are'} not {READ}: {listed}",
              file=sys.stderr)
