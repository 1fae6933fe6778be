"""Benchmark folders (the ../shared/bench format: corpus/*.pdf + questions.jsonl): recognising
and listing them, unpacking an uploaded zip of one safely (no absolute paths, no '..', no links,
bounded size and entry count), which folders a session may use, and where a collection's corpus
is ingested.

Not here: loading questions (backend.eval.gold) or running a method over them (backend.eval.runner).
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
import zipfile
from pathlib import Path, PurePosixPath

from backend.errors import StrataError, WorkspaceError

ZIP_MAX_ENTRIES = 20_000  # a collection of ~2,000 PDFs plus its metadata fits with room to spare
_COPY_CHUNK = 1 << 20
_S_IFMT, _S_IFLNK = 0o170000, 0o120000


def is_benchmark(folder: Path) -> bool:
    return (folder / "questions.jsonl").is_file() and (folder / "corpus").is_dir()


def check_benchmark(bench: Path) -> None:
    if not is_benchmark(bench):
        raise StrataError(f"'{bench.name}' is not a benchmark folder: it needs corpus/*.pdf and questions.jsonl.")
    if not any((bench / "corpus").glob("*.pdf")):
        raise StrataError(f"The benchmark '{bench.name}' has no PDFs in corpus/. Add the collection's PDFs there.")


def list_benchmarks(root: Path) -> list[Path]:
    """The benchmark collections in `root` (or `root` itself when it is one), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    if is_benchmark(root):
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and is_benchmark(p))


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    """Why a zip entry may not be unpacked, or None when it is a plain relative file or folder."""
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if ".." in PurePosixPath(name).parts:
        return "a '..' component"
    if (info.external_attr >> 16) & _S_IFMT == _S_IFLNK:
        return "a symbolic link"
    return None


def unpack_benchmark_zip(archive: Path, dest_root: Path, *, max_unpacked_mb: float, max_entries: int = ZIP_MAX_ENTRIES) -> Path:
    """Unpack an uploaded zip of one benchmark folder into a new folder under `dest_root` and
    return the collection folder inside it (the zip's root or its single top-level folder).

    Refuses, before writing anything: entries with absolute paths, '..' or links, more than
    `max_entries` entries, and a declared unpacked size over `max_unpacked_mb`. The bytes really
    written are counted too, so an archive whose headers lie stops at the same limit."""
    archive = Path(archive)
    limit_bytes = int(max_unpacked_mb * 1024 * 1024)
    if archive.stat().st_size > limit_bytes:
        raise StrataError(f"'{archive.name}' is larger than {max_unpacked_mb:g} MiB; upload a smaller benchmark.")
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise StrataError(f"'{archive.name}' is not a zip archive. Zip the benchmark folder (corpus/ + questions.jsonl) and upload that.") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.filename.startswith("__MACOSX/")]
        if len(infos) > max_entries:
            raise StrataError(f"'{archive.name}' holds {len(infos)} entries, more than the {max_entries} allowed.")
        for info in infos:
            why = _unsafe_member(info)
            if why:
                raise StrataError(f"'{archive.name}' was rejected: entry '{info.filename}' has {why}. Zip a plain folder.")
        declared = sum(i.file_size for i in infos)
        if declared > limit_bytes:
            raise StrataError(
                f"'{archive.name}' unpacks to {declared / 2**20:.0f} MiB, more than the {max_unpacked_mb:g} MiB allowed."
            )
        target = Path(dest_root) / uuid.uuid4().hex[:12]
        target.mkdir(parents=True)
        try:
            _extract(zf, infos, target, limit_bytes, archive.name)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
    bench = _find_collection(target)
    if bench is None:
        shutil.rmtree(target, ignore_errors=True)
        raise StrataError(
            f"'{archive.name}' holds no benchmark folder: put corpus/*.pdf and questions.jsonl at the top of the zip "
            "or in one folder inside it."
        )
    check_benchmark(bench)
    return bench


def _extract(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], target: Path, limit_bytes: int, archive_name: str) -> None:
    root = target.resolve()
    written = 0
    for info in infos:
        path = (root / info.filename.replace("\\", "/")).resolve()
        if not path.is_relative_to(root):  # belt and braces after _unsafe_member
            raise StrataError(f"'{archive_name}' was rejected: entry '{info.filename}' points outside the folder.")
        if info.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, path.open("wb") as dst:
            while chunk := src.read(_COPY_CHUNK):
                written += len(chunk)
                if written > limit_bytes:
                    raise StrataError(f"'{archive_name}' unpacks to more than {limit_bytes / 2**20:g} MiB; upload a smaller benchmark.")
                dst.write(chunk)


def _find_collection(folder: Path) -> Path | None:
    if (folder / "questions.jsonl").is_file():
        return folder
    subs = [p for p in folder.iterdir() if p.is_dir() and p.name != "__MACOSX"]
    if len(subs) == 1 and (subs[0] / "questions.jsonl").is_file():
        return subs[0]
    return None


def allowed_benchmark(bench: Path, bench_root: Path, session_workspace: Path) -> Path:
    """`bench` resolved, when it is one of bench_root's collections or an upload of this session
    (under session_workspace/eval/uploads); else a StrataError that says which to pick."""
    path = Path(bench).resolve()
    allowed = [Path(bench_root).resolve(), uploads_folder(session_workspace).resolve()]
    if not any(path.is_relative_to(root) for root in allowed):
        raise WorkspaceError(f"'{Path(bench).name}' is not a listed benchmark or an upload of this session; pick one from the list.")
    if not is_benchmark(path):
        raise StrataError(f"'{path.name}' is not a benchmark folder: it needs corpus/*.pdf and questions.jsonl.")
    return path


def uploads_folder(session_workspace: Path) -> Path:
    """Where a session's uploaded benchmark zips are unpacked (they go when the session goes)."""
    return Path(session_workspace) / "eval" / "uploads"


def benchmark_workspace(bench: Path, bench_root: Path, workspace_root: Path, session_workspace: Path) -> Path:
    """Where a benchmark's corpus is ingested, apart from the user's documents: the collections
    of bench_root (the same files for everyone) once under workspace_root/bench, an uploaded
    collection inside the session's workspace. `bench` must already be allowed."""
    bench = Path(bench).resolve()
    root = Path(bench_root).resolve()
    if bench.parent == root or bench == root:
        return (Path(workspace_root) / "bench" / bench.name).resolve()
    digest = hashlib.sha1(str(bench).encode()).hexdigest()[:12]
    return Path(session_workspace).resolve() / "eval" / "workspaces" / f"{bench.name}-{digest}"
