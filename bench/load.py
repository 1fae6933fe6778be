"""Many users at once through `gradio_client`, on loopback only: N askers and M uploaders.

Each asker is its own client (its own session) and asks --asks questions about the sample
corpus. Each uploader is its own client: it ingests a one-page PDF carrying a code word only it
knows, then asks for its own word (its file must come back) and for another uploader's word
(that file must not: sessions never see each other's files). Askers check that no uploaded file
ever shows in their results. Clients use gradio_client's defaults (timeouts included), as a
user's program would.

Prints ok/error counts, p50/p95 latency per kind of call, the errors met, the cross-session
results (must be 0), and how much the workspace root grew on disk: while the clients are
connected, and after the server stopped (session workspaces are removed at shutdown). Without
--url it starts the real app (bench/startup.py) with its own workspace root (a first start: the
sample is prepared while the clients run), starts the clients the moment `/` answers (or, with
--after-ready, once the sample is ready), and stops it at the end. It also reads the CPU time of
the app's process tree over the run and prints the throughput next to the CPU bound: calls per
second <= cores / (CPU-seconds per call). Bounded: --deadline seconds for the whole run, after
which unfinished calls count as errors and the script stops.

Usage: python bench/load.py [--askers 50] [--asks 4] [--uploaders 10] [--ramp-s 0] [--after-ready] [--url URL] [--root DIR]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.sessions import folder_bytes  # noqa: E402 (bytes on disk: a hard-linked file counts once)
from bench.startup import READY_LINE, AppProcess  # noqa: E402

log = logging.getLogger("bench.load")

QUESTIONS = (
    "How many trees were planted?",
    "What is the Cool Streets Programme?",
    "How much did surface temperatures drop?",
    "Which neighbourhoods took part?",
    "What was the budget of the programme?",
)
METHODS = ("bm25", "hybrid", "hikey")
WORDS = ("quokka", "narwhal", "axolotl", "pangolin", "okapi", "tarsier", "kakapo", "saola", "dugong", "numbat",
         "gharial", "fossa", "bilby", "quoll", "takin", "markhor", "serow", "binturong", "jerboa", "aye-aye")


@dataclass(slots=True)
class Tally:
    """Every call's kind, outcome and latency (thread-safe through its lock)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    cross_session: list[str] = field(default_factory=list)
    finished: list[tuple[str, float]] = field(default_factory=list)  # (kind, time.time()) of every call that succeeded

    def call(self, kind: str, fn: Callable[[], dict]) -> dict | None:
        started = time.perf_counter()
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 (a bench counts every failure a client can meet)
            with self.lock:
                self.errors.append(f"{kind}: {type(exc).__name__}: {str(exc)[:160]}")
            return None
        with self.lock:
            self.latencies.setdefault(kind, []).append(time.perf_counter() - started)
            self.finished.append((kind, time.time()))
        return out


def probe_pdf(path: Path, word: str) -> Path:
    import pymupdf

    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 90), f"Notes on the {word}", fontsize=20, fontname="hebo")
        body = f"The {word} count at the field station was {random.randint(100, 9999)} this season. " * 6
        page.insert_textbox(pymupdf.Rect(72, 120, 520, 500), body, fontsize=10.5)
        pdf.save(path)
    return path


def client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False)


def asker(url: str, asks: int, uploaded: set[str], tally: Tally, rng: random.Random) -> None:
    c = tally.call("connect", lambda: client(url))
    if c is None:
        return
    for _ in range(asks):
        q, m = rng.choice(QUESTIONS), rng.choice(METHODS)
        reply = tally.call("ask", lambda: c.predict(question=q, method=m, top_k=5, api_name="/ask"))
        seen = {r["doc"] for r in reply["results"]} if reply else set()
        if seen & uploaded:
            with tally.lock:
                tally.cross_session.append(f"an asker saw {sorted(seen & uploaded)}")


def uploader(url: str, pdf: Path, own: str, other: str, tally: Tally) -> None:
    from gradio_client import handle_file

    c = tally.call("connect", lambda: client(url))
    if c is None:
        return
    report = tally.call("ingest", lambda: c.predict(files=[handle_file(str(pdf))], api_name="/ingest"))
    if report is None:
        return  # counted as an error already; its own-file checks would only repeat it
    if report.get("ingested") != 1:
        with tally.lock:
            tally.errors.append(f"ingest: {pdf.name} not ingested: {report.get('files')}")
    word_own, word_other = own.split("_")[0], other.split("_")[0]
    mine = tally.call("ask", lambda: c.predict(question=f"{word_own} count", method="bm25", top_k=5, api_name="/ask"))
    if mine is not None and own not in {r["doc"] for r in mine["results"]}:
        with tally.lock:
            tally.errors.append(f"ask: {own} not found by its own session")
    theirs = tally.call("ask", lambda: c.predict(question=f"{word_other} count", method="bm25", top_k=5, api_name="/ask"))
    if theirs is not None and other in {r["doc"] for r in theirs["results"]}:
        with tally.lock:
            tally.cross_session.append(f"the session of {own} saw {other}")


def run_clients(url: str, args: argparse.Namespace, work: Path, tally: Tally) -> bool:
    """All clients at once; False when the deadline cut the run short."""
    names = [f"{WORDS[i % len(WORDS)]}{i // len(WORDS) or ''}_notes.pdf" for i in range(args.uploaders)]
    pdfs = [probe_pdf(work / n, n.split("_")[0]) for n in names]
    rng = random.Random(7)
    threads = [
        threading.Thread(target=asker, args=(url, args.asks, set(names), tally, random.Random(rng.random())), daemon=True)
        for _ in range(args.askers)
    ]
    threads += [
        threading.Thread(target=uploader, args=(url, pdf, names[i], names[(i + 1) % len(names)], tally), daemon=True)
        for i, pdf in enumerate(pdfs)
    ]
    random.Random(3).shuffle(threads)
    deadline = time.monotonic() + args.deadline
    for i, t in enumerate(threads):  # --ramp-s spreads the clients' arrival, as users arrive, instead of one instant
        if args.ramp_s and i:
            time.sleep(args.ramp_s / len(threads))
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    unfinished = sum(t.is_alive() for t in threads)
    if unfinished:
        tally.errors.append(f"deadline: {unfinished} client(s) still running after {args.deadline:.0f} s")
    return unfinished == 0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a process and its descendants, those that ended included
    once their parent reaped them (psutil)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        t = proc.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in proc.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                pass
        return total
    except psutil.Error:
        return 0.0


def log_epoch(line: str) -> float | None:
    """The time.time() of an app log line ('2026-12-02 01:05:52,649 INFO ...', local time)."""
    try:
        return time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) + int(line[20:23]) / 1000
    except (ValueError, IndexError):
        return None


def after_ready(tally: Tally, ready_at: float | None, bound: float | None) -> None:
    """Asks served once the sample was ready (before it, they wait for it): the rate the crowd got."""
    asks = [t for kind, t in tally.finished if kind == "ask" and ready_at is not None and t > ready_at]
    if not asks:
        return
    window = max(asks) - ready_at
    rate = len(asks) / window if window > 0 else float("nan")
    note = f" ({rate / bound:.0%} of the CPU bound)" if bound else ""
    print(f"after the sample was ready: {len(asks)} asks in {window:.0f} s = {rate:.2f} asks/s{note}")


def calibrate(url: str, pid: int, asks: int) -> float | None:
    """CPU-seconds of the app's process tree per question, measured alone: one client asks `asks`
    questions one after another once the crowd has gone (the serving overhead included)."""
    if asks <= 0:
        return None
    c = client(url)
    rng = random.Random(11)
    c.predict(question=QUESTIONS[0], method="hikey", top_k=5, api_name="/ask")  # this client's first call warms it
    before = tree_cpu_s(pid)
    for _ in range(asks):
        c.predict(question=rng.choice(QUESTIONS), method=rng.choice(METHODS), top_k=5, api_name="/ask")
    return (tree_cpu_s(pid) - before) / asks


def cpu_report(tally: Tally, wall_s: float, cpu_s: float, gate_line: str | None, alone_s: float | None) -> None:
    """Throughput against the CPU bound: with C cores and S CPU-seconds per call, at most C / S calls a
    second; S from the app's whole process tree, and per question from the API's admission gate (the
    CPU time of the thread that answered it, its last log line)."""
    calls = sum(len(v) for v in tally.latencies.values() if v) - len(tally.latencies.get("connect", []))
    cores = os.cpu_count() or 1
    if not calls or wall_s <= 0:
        return
    per_call = cpu_s / calls
    bound = cores / per_call if per_call > 0 else float("inf")
    print(f"\nCPU: the app's process tree used {cpu_s:.0f} CPU-s over {wall_s:.0f} s ({cpu_s / wall_s:.2f} of {cores} cores; "
          "the sample preparation included when it overlapped)")
    print(f"throughput {calls / wall_s:.2f} calls/s ({calls} asks and ingests); CPU bound {bound:.2f} calls/s "
          f"= {cores} cores / {per_call:.2f} CPU-s per call; {calls / wall_s / bound:.0%} of the bound")
    if gate_line:
        per_ask = float(gate_line.rsplit(" and ", 1)[-1].split()[0])
        asks = len(tally.latencies.get("ask", []))
        print(f"questions alone: {per_ask:.3f} CPU-s each in the answering thread (app log: {gate_line.split(': ', 1)[-1]}); "
              f"CPU bound {cores / per_ask:.2f} asks/s on {cores} cores; achieved {asks / wall_s:.2f} asks/s over the whole run")
    if alone_s:
        asks = len(tally.latencies.get("ask", []))
        print(f"questions asked alone afterwards: {alone_s:.3f} CPU-s each for the app's whole process tree; CPU bound "
              f"{cores / alone_s:.2f} asks/s = {cores} cores / {alone_s:.3f}; achieved {asks / wall_s:.2f} asks/s under the crowd")


def report(tally: Tally, wall_s: float, disk: dict[str, int]) -> None:
    print("| call | ok | p50 (s) | p95 (s) | max (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for kind, values in sorted(tally.latencies.items()):
        print(f"| {kind} | {len(values)} | {statistics.median(values):.1f} | {pct(values, 0.95):.1f} | {max(values):.1f} |")
    ok = sum(len(v) for v in tally.latencies.values())
    print(f"\nok calls: {ok}, errors: {len(tally.errors)}, cross-session results: {len(tally.cross_session)}, wall {wall_s:.0f} s")
    for line, n in Counter(e.split(" (")[0] for e in tally.errors + tally.cross_session).most_common(20):
        print(f"  - {n} x {line}")
    mb = 1024 * 1024
    print(f"\nworkspace root: {disk['before'] / mb:.1f} MB before the clients, {disk['during'] / mb:.1f} MB when they finished "
          f"(growth {(disk['during'] - disk['before']) / mb:.1f} MB)", end="")
    if "after" in disk:
        print(f", {disk['after'] / mb:.1f} MB after the server stopped (growth {(disk['after'] - disk['before']) / mb:.1f} MB)")
    else:
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--askers", type=int, default=50)
    ap.add_argument("--asks", type=int, default=4)
    ap.add_argument("--uploaders", type=int, default=10)
    ap.add_argument("--url", default=None, help="a running app on loopback (default: start one)")
    ap.add_argument("--root", type=Path, default=None, help="scratch folder for the started app and the probe PDFs")
    ap.add_argument("--workspace-root", type=Path, default=None, help="with --url: that app's workspace root, to measure disk")
    ap.add_argument("--deadline", type=float, default=900.0, help="seconds for the whole client run")
    ap.add_argument("--ramp-s", type=float, default=0.0, help="start the clients over this many seconds (0: all at once)")
    ap.add_argument("--calibrate", type=int, default=20, help="questions asked alone after the run to measure CPU-s per ask")
    ap.add_argument("--after-ready", action="store_true", help="start the clients once the sample is ready, not at the first page")
    args = ap.parse_args()
    if args.askers > 200 or args.uploaders > 40:
        ap.error("at most 200 askers and 40 uploaders: this is a loopback bench, not a flood")
    if args.url and not args.url.startswith(("http://127.0.0.1", "http://localhost")):
        ap.error("--url must be on loopback (http://127.0.0.1:PORT/)")
    logging.basicConfig(level=logging.WARNING)
    root = args.root or Path(tempfile.mkdtemp(prefix="strata-load-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"$ python bench/load.py {' '.join(sys.argv[1:])}")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs\n")
    tally, disk = Tally(), {}
    if args.url:
        ws_root = args.workspace_root
        disk["before"] = folder_bytes(ws_root) if ws_root else 0
        started = time.perf_counter()
        run_clients(args.url, args, root, tally)
        disk["during"] = folder_bytes(ws_root) if ws_root else 0
    else:
        with AppProcess(root, "app-load.log") as app:
            first_page = app.wait_first_page(400)
            print(f"first page {first_page:.1f} s after start; clients start {'once the sample is ready' if args.after_ready else 'now'}")
            if args.after_ready and app.wait_log(READY_LINE, 600) is None:
                raise SystemExit(f"the app did not get ready; see {app.log_path}")
            ws_root = root / "workspaces"
            disk["before"] = folder_bytes(ws_root)
            started, cpu_before = time.perf_counter(), tree_cpu_s(app.proc.pid)
            run_clients(app.url, args, root, tally)
            cpu_s, wall_s = tree_cpu_s(app.proc.pid) - cpu_before, time.perf_counter() - started
            disk["during"] = folder_bytes(ws_root)
            alone_s = calibrate(app.url, app.proc.pid, args.calibrate)
            log_text = app.log_path.read_text(encoding="utf-8", errors="replace")
            ready = [line for line in log_text.splitlines() if READY_LINE in line]
            print(f"sample: {ready[-1].split(': ', 1)[-1]}" if ready else "the sample was not ready when the clients finished")
            gate_lines = [line for line in log_text.splitlines() if "questions: " in line and "CPU-s per call" in line]
        disk["after"] = folder_bytes(ws_root)
        report(tally, wall_s, disk)
        cpu_report(tally, wall_s, cpu_s, gate_lines[-1] if gate_lines else None, alone_s)
        after_ready(tally, log_epoch(ready[-1]) if ready else None, (os.cpu_count() or 1) / alone_s if alone_s else None)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    report(tally, time.perf_counter() - started, disk)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
