"""Many documents from the command line: a folder or several files as FILE, each processed in turn, a progress line
on a terminal, and where each result goes."""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

from pipeline import unpack
from pipeline.cli.language import in_language
from pipeline.settings import get_settings
from pipeline.unpack import apple
from pipeline.unpack.members import OS_METADATA_HEAD, Member, empty_mail_folder, member_too_large, metadata_test, \
    windows_device

# a folder's files opened as when named: each member of a ZIP, each invoice of a message a document of its own
CONTAINER_SUFFIXES = (".zip", ".eml", ".emlx", ".mbox", ".msg", ".p7m")
DOCUMENT_SUFFIXES = (".xml", ".pdf") + CONTAINER_SUFFIXES
READ = "*.xml, *.pdf, *.eml, *.mbox, *.msg, *.p7m or *.zip"  # DOCUMENT_SUFFIXES in words (and mail: `_read_here`)
_MAIL = ("mbox", "eml", "emlx")  # what a folder's file of another name is read as, by its first bytes


def expand(paths: Iterable[Path]) -> list[Path]:
    """The files named, a folder's e-invoice files, e-mails and ZIPs (`_read_here`, recursively, sorted) in their
    place, and the attachments Apple Mail stored apart from a message of the folder (`stored_apart`: sent with it
    by `pipeline jobs submit`); in a folder, what the operating system or a mail program keeps beside documents
    (macOS's "._name", an Apple Mail export's Info.plist, Thunderbird's .msf index) is left out."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not _os_file(p))
            claimed = stored_apart(path, files).claimed
            out += [p for p in files if _relative(p, path) in claimed or _read_here(p)]
        else:
            out.append(path)
    return out


def stored_apart(folder: Path, files: list[Path]) -> apple.Stored:
    """The attachments Apple Mail stored apart from the messages among a folder's files, by their paths in it."""
    return apple.Stored((_relative(p, folder) for p in files), lambda name: _read_file(name, folder / name))


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def _read_file(name: str, path: Path) -> Member:
    """A stored attachment's bytes, bounded as one upload."""
    limit = get_settings().max_upload_bytes
    if path.stat().st_size > limit:
        return Member(name, error=member_too_large(limit))
    return Member(name, path.read_bytes())


def _beside(path: Path) -> apple.Apart | None:
    """The attachments Apple Mail stored apart from a message file given alone (`Messages/102.partial.emlx`):
    `Attachments/102/` beside its Messages folder, `102.<section>.emlxpart` beside it."""
    if apple.message(path.name) is None:
        return None
    mailbox = path.parent.parent if path.parent.name.lower() == "messages" else path.parent
    number = path.name.split(".", 1)[0]
    files = [p for p in (mailbox / "Attachments" / number).glob("*/*") if p.is_file()] + \
        [p for p in path.parent.glob(f"{number}.*.emlxpart") if p.is_file()]
    return stored_apart(mailbox, files + [path]).of(_relative(path, mailbox)) if files else None


def _os_file(path: Path) -> bool:
    """What an operating system keeps beside documents, its first bytes read only where its name is one's."""
    return metadata_test(path.name) is not None and unpack.os_metadata(path.name, _head(path))


def _read_here(path: Path) -> bool:
    """Whether a folder's file is read: one of DOCUMENT_SUFFIXES, or mail by its first bytes whatever its name (a
    mailbox has none where Thunderbird keeps it, "Inbox", or in Apple Mail's export, "Inbox.mbox/mbox"); not what
    an operating system or a mail program keeps beside documents (`unpack.os_metadata`)."""
    head = _head(path)
    if unpack.os_metadata(path.name, head):
        return False
    return path.suffix.lower() in DOCUMENT_SUFFIXES or unpack.kind(path.name, head) in _MAIL


def _metadata(path: Path) -> bool:
    """What an operating system or a mail program keeps beside documents, Thunderbird's empty mail folders too."""
    return unpack.os_metadata(path.name, _head(path)) or \
        empty_mail_folder(path.stat().st_size, lambda index: path.with_name(index).is_file(), path.name)


class Document(NamedTuple):
    """One document of the files given: a file, read when its turn comes (`path`), or a ZIP's or a message's
    (`data`, `email`), or one refused unread or a message without an invoice (`error`: (code, message));
    `signature`: what the signature of the signed file it came out of says."""
    name: str
    path: Path | None = None
    data: bytes | None = None
    error: tuple[str, str] | None = None
    email: dict | None = None
    signature: dict | None = None
    named: bool = False  # a file named as such (its `name` is the path typed): its results are named by its file name


def documents(paths: Iterable[Path], program: str, language: str = "en") -> list[Document]:
    """The documents of the files and folders given, as `pipeline validate`, `parse`, `convert` and `render` take
    them: a folder's files as `expand` finds them (the others named on stderr); a ZIP or an e-mail opened
    (`pipeline.unpack`, each document bounded as one upload). Its documents are named as the service names a
    job's parts' (`pipeline jobs submit` sends these files): under the file's name or path in its folder when there
    are several files (`month.zip/a.xml`, `sub/month.zip/a.xml`; one that is no readable ZIP is then an entry of its
    own), by their own names when it is the only one. Raises the unpacker's ApiError (the only file is no readable
    ZIP, a zip bomb). `language`: that of the skipped files' line (`say_skipped`)."""
    given: list[tuple[Path, str | None, apple.Apart | None]] = []  # (file, its path in a folder given, stored)
    folders: list[tuple[Path, apple.Stored]] = []
    for path in paths:
        if path.is_dir():
            say_skipped(path, program, language)
            files = expand([path])
            stored = stored_apart(path, files)
            folders.append((path, stored))
            given += [(p, shown(p.relative_to(path)), stored.of(_relative(p, path))) for p in files
                      if _relative(p, path) not in stored.claimed]  # (read as their message's attachments)
        else:
            given.append((path, None, _beside(path)))
    unpacker = unpack.Unpacker(unpack.Limits(max_files=1 << 20, max_member=get_settings().max_upload_bytes,
                                             max_total=1 << 34))
    out: list[Document] = []
    several = len(given) + sum(len(stored.claimed) for _, stored in folders) > 1  # (as the job's parts are counted)
    for path, name, stored in given:
        # a folder's .xml or .pdf is a document (its other files were chosen as containers or by their first bytes)
        if name is not None and path.suffix.lower() not in (".xml", ".pdf") or name is None and is_archive(path):
            prefix = (name or shown(path.name)) if several else ""
            members = (unpacker.one_of_several if prefix else unpacker.file)(shown(path.name), path, prefix,
                                                                            stored=stored)
            out += [Document(m.name, None, m.data, m.error, m.email, m.signature) for m in members]
        else:
            out.append(Document(name or shown(path), path, named=name is None))
    # a stored attachment its message did not take (the message could not be read): a file of its own, as the
    # service takes it
    out += [Document(shown(name), folder / name) for folder, stored in folders for name in stored.unread()]
    return out


class Outputs:
    """Where each of several documents' results goes: `folder`/<file>, named after its source as a job's results ZIP
    and `validate --html-dir` name them (`result_file`): `a.pdf` parsed is `a.pdf.json`, `a.xml` converted stays
    `a.xml` (but for a syntax its name says, `renamed`: convert's `x.cii.xml` to UBL is `x.ubl.xml`), a ZIP's
    member `month.zip_a.xml.json`, a folder's `sub/a.xml` `sub_a.xml.json`. Named by the stem
    (`invoice.json`, `invoice-2.json`, `invoice-3.json`), the results of `invoice.xml`, `invoice.pdf` and
    `sub/invoice.xml` could not be told apart, and a PDF's converted XML took the name of the XML beside it."""

    def __init__(self, folder: Path, suffix: str, docs: list[Document], renamed=lambda name: name):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.suffix, self.taken, self.renamed = folder, suffix, set(), renamed
        self.index = {id(doc): n for n, doc in enumerate(docs, start=1)}
        # `-o` the folder read: a result that keeps its source's name would be written over a source
        self.sources = {doc.path.resolve() for doc in docs if doc.path is not None and str(doc.path) != "-"}

    def __call__(self, document: Document) -> Path:
        name = self.renamed(document.path.name if document.named else document.name)
        return self.folder / result_file(name, self.suffix, self.index[id(document)], self.taken,
                                         lambda file: (self.folder / file).resolve() in self.sources)


def result_file(name: str, suffix: str, index: int, taken: set[str], own=lambda file: False) -> str:
    """A document's result file name (`taken`: those of this run, lower case, the new one added): its name made
    one (`safe_name`), `suffix` added unless it ends so, with `index` (its place among the results) in front where
    an earlier result took that one (compared in lower case: macOS and Windows tell no case apart) or where it
    would be the source file itself (`own`)."""
    file = safe_name(name)
    if not file.lower().endswith(suffix.lower()):
        file += suffix
    while file.lower() in taken or own(file):
        file = f"{index}-{file}"
    taken.add(file.lower())
    return file


def _head(path: Path) -> bytes:
    """A file's first bytes, enough to tell metadata (`unpack.os_metadata`) and mail (`unpack.kind`) by."""
    try:
        with open(path, "rb") as f:
            return f.read(max(OS_METADATA_HEAD, unpack.HEAD))
    except OSError:  # (a file that cannot be read: its reader names the error)
        return b""


class _FolderPath(type(Path())):
    """An output typed with a trailing separator (`-o out/`): a Path, which drops that separator, marked."""


def output_path(text: str) -> Path:
    """argparse's type of an output: `out/` (or `out/.`) names a folder, kept as `_FolderPath`: as a plain Path,
    `pipeline convert a.xml -o out/` wrote a file called `out`."""
    seps = tuple(sep for sep in (os.sep, os.altsep) if sep)
    folder = text.endswith(seps) or text == "." or text.endswith(tuple(sep + "." for sep in seps))
    return _FolderPath(text) if folder else Path(text)


def names_folder(path: Path | None) -> bool:
    """Whether an output was typed as a folder (`output_path`)."""
    return isinstance(path, _FolderPath)


def into_folder(docs: list[Document], output: Path | None) -> bool:
    """Whether `docs`' results go into the folder `output`: several documents, a folder that exists, or one typed
    as a folder (`-o out/`, made when missing, as for several documents)."""
    return len(docs) > 1 or output is not None and (output.is_dir() or names_folder(output))


def destinations(docs: list[Document], output: Path | None, suffix: str, renamed=lambda name: name):
    """Where each of `docs`' results goes (a function of the Document): `output` itself for one document (None:
    stdout); into the folder (`Outputs`, names `renamed` first) where `into_folder`."""
    if into_folder(docs, output):
        return Outputs(output, suffix, docs, renamed)
    return lambda _document: output


def progress(items: list[Document]) -> Iterator[Document]:
    """The documents, with a `[n/total] name` line on stderr when it is a terminal and there are several."""
    show = len(items) > 1 and sys.stderr.isatty()
    for n, item in enumerate(items, start=1):
        if show:
            sys.stderr.write(f"\r\x1b[K[{n}/{len(items)}] {item.name[-60:]}")
            sys.stderr.flush()
        yield item
    if show:
        sys.stderr.write("\r\x1b[K")


def is_archive(path: Path) -> bool:
    """A container of documents: a ZIP archive, an e-mail (.eml, .mbox, Outlook's .msg) or a signed file (.p7m),
    by its first bytes or its name (a file that cannot be read is not one: its reader names the error)."""
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


def say_skipped(folder: Path, program: str, language: str = "en") -> None:
    """A folder's files that are not read (`_read_here`), named on stderr in `language`: nothing is left out unsaid
    but what an operating system or a mail program keeps beside documents (a mailbox's index, .DS_Store)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    claimed = stored_apart(folder, [p for p in files if not _os_file(p)]).claimed  # (their message's attachments)
    skipped = sorted(shown(p.relative_to(folder)) for p in files
                     if _relative(p, folder) not in claimed and not _read_here(p) and not _metadata(p))
    if skipped:
        listed = ", ".join(skipped[:10]) + (f", ... (+{len(skipped) - 10})" if len(skipped) > 10 else "")
        one = len(skipped) == 1
        said = (f"{len(skipped)} {'Datei' if one else 'Dateien'} übersprungen, die nicht "
                f"{read_as(language)} {'ist' if one else 'sind'}" if language == "de" else
                f"skipped {len(skipped)} file{'' if one else 's'} that {'is' if one else 'are'} not {READ}")
        print(f"{program}: {shown(folder)}: {said}: {listed}", file=sys.stderr)


def read_as(language: str) -> str:
    """READ in `language`'s words."""
    return READ.replace(" or ", " oder ") if language == "de" else READ


def content(document: Document) -> bytes:
    """A document's bytes: a ZIP's or a message's as unpacked, a file's (or stdin's, `-`) read now."""
    if document.data is not None:
        return document.data
    return sys.stdin.buffer.read() if str(document.path) == "-" else document.path.read_bytes()


def said_unread(document: Document, language: str = "en") -> int:
    """A document refused unread (NESTED_ARCHIVE, FILE_TOO_LARGE, ...: exit 2) or a message without an invoice
    (NO_INVOICE: a notice, exit 0), one line on stderr as the other commands' errors, in `language`."""
    code, message = document.error
    print(f"{document.name}: {code}: {in_language(language, code, message)}", file=sys.stderr)
    return 0 if code in unpack.NOTICES else 2
