"""The optional image encoder: a CLIP/SigLIP-style dual encoder (transformers AutoModel +
AutoProcessor from a local folder) that puts figure crops and text queries in one vector space,
plus the helpers ingest and the strategies share: the images of a parsed document's figures and
figure regions, the text-to-image score of a query per component, and the note a trace carries
when figures are matched by their text alone.

Settings: `index.image_encoder` names the model folder; empty (the default) turns images off,
and figures are then represented by caption + OCR text + upper context only. The model loads
lazily, once per (folder, device), on the GPU when torch sees one.

What it does not do: caption or OCR images (the parser does), download weights (a local folder
only, unless HF_HUB_OFFLINE=0), or embed tables (their text is their content).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from backend.config import IndexSettings
from backend.errors import ConfigError
from backend.index.encoders import resolve_device
from backend.types import Layer, Node, NodeKind, Trace

if TYPE_CHECKING:
    from PIL.Image import Image

    from backend.graph.corpus import Corpus

log = logging.getLogger(__name__)

FIGURES_AS_TEXT_NOTE = (
    "Figures were matched by their caption, OCR text and upper context only: this workspace has no image "
    "index. Set STRATA_INDEX__IMAGE_ENCODER to a local CLIP or SigLIP folder and ingest into a new workspace "
    "to match figures by their pixels too."
)
MIN_REGION_PX = 4  # figure regions smaller than this (a tick label) get no image vector of their own
SIGLIP_TEXT_TOKENS = 64  # SigLIP was trained on text padded to 64 tokens


class ImageEncoder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def encode_images(self, images: Sequence[Image | str | Path]) -> np.ndarray:
        """(n, dim) float32, L2-normalised rows."""
        ...

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised rows, in the space of the images."""
        ...


def resolve_image_model_path(name: str) -> str:
    if Path(name).exists():
        return str(Path(name))
    if os.environ.get("HF_HUB_OFFLINE", "1") == "1":
        raise ConfigError(
            f"Image encoder '{name}' is not a local folder. Set STRATA_INDEX__IMAGE_ENCODER to the folder of a "
            "CLIP or SigLIP model saved with save_pretrained, or to '' to turn images off (Strata never "
            "downloads models unless HF_HUB_OFFLINE=0)."
        )
    return name


@functools.lru_cache(maxsize=2)
def _load_dual_encoder(path: str, device: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoProcessor

    log.info("loading image encoder %s on %s", path, device)
    model = AutoModel.from_pretrained(path).to(device).eval()
    if not (hasattr(model, "get_image_features") and hasattr(model, "get_text_features")):
        raise ConfigError(
            f"The model at '{path}' ({type(model).__name__}) is not a dual image-text encoder; "
            "STRATA_INDEX__IMAGE_ENCODER needs a CLIP or SigLIP model."
        )
    return model, AutoProcessor.from_pretrained(path)


def _features(out) -> np.ndarray:
    # transformers 4 returns the projected tensor, 5 a model output whose pooler_output is projected.
    tensor = out if hasattr(out, "detach") else out.pooler_output
    vecs = tensor.detach().float().cpu().numpy()
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.maximum(norms, 1e-12)).astype(np.float32)


def _as_rgb(image: Image | str | Path) -> Image:
    from PIL import Image as PILImage

    if isinstance(image, (str, Path)):
        with PILImage.open(image) as im:
            return im.convert("RGB")
    return image.convert("RGB")


class DualImageEncoder:
    """A CLIP/SigLIP model: images and texts into one space (GPU when present)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 16) -> None:
        self._path = resolve_image_model_path(model)
        self._device = resolve_device(device)
        self._batch = batch_size
        # The signature a workspace records: vectors of another model must not be mixed in.
        self.name = f"image={Path(self._path).name}"

    @property
    def device(self) -> str:
        return self._device

    def _loaded(self):
        return _load_dual_encoder(self._path, self._device)

    @property
    def dim(self) -> int:
        config = self._loaded()[0].config
        return int(getattr(config, "projection_dim", None) or config.text_config.hidden_size)

    def encode_images(self, images: Sequence[Image | str | Path]) -> np.ndarray:
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        model, processor = self._loaded()
        out = []
        for start in range(0, len(images), self._batch):
            batch = [_as_rgb(im) for im in images[start: start + self._batch]]
            inputs = processor(images=batch, return_tensors="pt").to(self._device)
            with torch.inference_mode():
                out.append(_features(model.get_image_features(**inputs)))
        return np.concatenate(out)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        model, processor = self._loaded()
        siglip = "siglip" in model.config.model_type
        max_len = SIGLIP_TEXT_TOKENS if siglip else int(model.config.text_config.max_position_embeddings)
        out = []
        for start in range(0, len(texts), self._batch):
            inputs = processor(
                text=list(texts[start: start + self._batch]), padding="max_length" if siglip else True,
                truncation=True, max_length=max_len, return_tensors="pt",
            ).to(self._device)
            with torch.inference_mode():
                out.append(_features(model.get_text_features(**inputs)))
        return np.concatenate(out)


def build_image_encoder(settings: IndexSettings) -> DualImageEncoder | None:
    """The configured image encoder, or None when `index.image_encoder` is empty (images off)."""
    if not settings.image_encoder.strip():
        return None
    return DualImageEncoder(settings.image_encoder.strip(), settings.device, settings.batch_size)


# ---------------------------------------------------------------- ingest


def region_crop(figure_image: Image, figure_bbox, region_bbox) -> Image | None:
    """The part of a figure's crop image under one of its regions (bboxes in PDF points), or
    None when the region is smaller than MIN_REGION_PX on the crop."""
    fx0, fy0, fx1, fy1 = figure_bbox
    if fx1 <= fx0 or fy1 <= fy0:
        return None
    sx = figure_image.width / (fx1 - fx0)
    sy = figure_image.height / (fy1 - fy0)
    x0, y0, x1, y1 = region_bbox
    box = (
        max(0, round((x0 - fx0) * sx)), max(0, round((y0 - fy0) * sy)),
        min(figure_image.width, round((x1 - fx0) * sx)), min(figure_image.height, round((y1 - fy0) * sy)),
    )
    if box[2] - box[0] < MIN_REGION_PX or box[3] - box[1] < MIN_REGION_PX:
        return None
    return figure_image.crop(box)


def figure_images(nodes: list[Node], root: Path) -> tuple[list[str], list[Image]]:
    """(node ids, images) of every figure with a crop file under `root` and of every region
    (OBJECT subcomponent) of such a figure, the region cut out of the figure's crop."""
    ids: list[str] = []
    images: list[Image] = []
    figures: dict[str, tuple[Node, Image]] = {}
    for n in nodes:
        if n.kind != NodeKind.FIGURE or not n.crop or n.bbox is None:
            continue
        try:
            image = _as_rgb(root / n.crop)
        except OSError as exc:  # a missing or unreadable crop: the figure keeps its text only
            log.warning("no image vector for %s: cannot read %s (%s)", n.id, n.crop, exc)
            continue
        figures[n.id] = (n, image)
        ids.append(n.id)
        images.append(image)
    for n in nodes:
        if n.kind != NodeKind.OBJECT or n.layer != Layer.SUBCOMPONENT or n.parent not in figures or n.bbox is None:
            continue
        parent, image = figures[n.parent]
        region = region_crop(image, parent.bbox, n.bbox)
        if region is not None:
            ids.append(n.id)
            images.append(region)
    return ids, images


def encode_figures(encoder: ImageEncoder, nodes: list[Node], root: Path) -> dict[str, np.ndarray]:
    """Image vectors of a parsed document's figures and figure regions: node id -> (dim,)."""
    ids, images = figure_images(nodes, root)
    if not ids:
        return {}
    return dict(zip(ids, encoder.encode_images(images)))


# ---------------------------------------------------------------- query time


def has_image_index(corpus: Corpus, image_encoder: ImageEncoder | None) -> bool:
    """Whether figures can be scored by their pixels: the workspace has image vectors, made by
    this encoder (vectors of another model live in another space)."""
    layer = getattr(corpus, "image_layer", None)
    if image_encoder is None or layer is None or not layer.ids:
        return False
    if layer.signature != image_encoder.name:
        log.warning("image index of %s ignored: it was built with %s, the configured encoder is %s", corpus.root, layer.signature, image_encoder.name)
        return False
    return True


def visual_component_scores(corpus: Corpus, image_encoder: ImageEncoder | None, query: str) -> dict[str, float]:
    """Text-to-image score of the query per figure component: the cosine with the figure's crop
    or its best region, min-max normalised over the image index so that it mixes with the
    normalised text scores. Empty without an image index or encoder."""
    if not has_image_index(corpus, image_encoder):
        return {}
    layer = corpus.image_layer
    cos = layer.dense.scores(image_encoder.encode_texts([query])[0])  # (n_images,)
    lo, hi = float(cos.min()), float(cos.max())
    norm = (cos - lo) / (hi - lo) if hi - lo > 1e-12 else np.ones_like(cos)
    out: dict[str, float] = {}
    for node_id, score in zip(layer.ids, norm.tolist()):
        comp = corpus.component_of(node_id)
        if score > out.get(comp, -1.0):
            out[comp] = score
    return out


def blend_visual(unit_scores: np.ndarray, layer, visual: dict[str, float], gamma: float) -> np.ndarray:
    """gamma * visual + (1 - gamma) * text for the rows of `layer` that have a visual score: (n,)."""
    out = unit_scores.copy()
    for comp, v in visual.items():
        row = layer.dense.row.get(comp)
        if row is not None:
            out[row] = gamma * v + (1 - gamma) * out[row]
    return out


def note_figures_as_text(trace: Trace, corpus: Corpus, node_ids: list[str], image_encoder: ImageEncoder | None) -> None:
    """Say in the trace that figures were ranked by their text alone, when they were."""
    if has_image_index(corpus, image_encoder) or FIGURES_AS_TEXT_NOTE in trace.notes:
        return
    if any(corpus.nodes[i].kind in (NodeKind.FIGURE, NodeKind.OBJECT) for i in node_ids if i in corpus.nodes):
        trace.notes.append(FIGURES_AS_TEXT_NOTE)
