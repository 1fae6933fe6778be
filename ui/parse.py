"""Parse tab: how one PDF was parsed. The page image with its layout blocks boxed (coloured by
kind, numbered in reading order; as wide as its column, with a zoom), the blocks as a list, and the section tree beside it.

Picking a section (in the tree or the jump menu) shows its page with its heading selected;
clicking a block in the list selects that unit. The selected box is drawn thick in the selection
colour on the page and described under it; a selected table is shown as a table of its cells.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from backend.service import BLOCK_COLORS, Service
from backend.types import BBox, Block, BlockKind, Highlight, Section
from ui import render
from ui.common import PRIVATE, session_workspace, user_errors

NO_DOCUMENTS = render.empty_state(
    "No documents in this workspace yet.", "Upload PDFs in the Library tab and press Ingest; they will show up here."
)
NO_SELECTION = render.empty_state("Click a section in the tree or a block in the list below to select it.")
SELECTED_COLOR = "#ff2d55"
# The page is drawn as wide as its column (zoom 100%) and wider at a higher zoom, in a box that
# scrolls; rendered at this resolution it stays sharp at the column's width and readable at 200%.
PAGE_DPI = 120
ZOOM_STEPS = (100, 400, 25)  # percent of the column's width: minimum, maximum, step
# The zoom is a CSS variable on the image's component: it holds across new pages, needs no server call.
ZOOM_JS = """
(zoom) => {
  const box = document.getElementById('parse-page-image');
  if (box) { box.style.setProperty('--st-page-zoom', String(zoom) + '%'); }
  return zoom;
}
"""
# Each section title in the tree carries data-section; a click there becomes this component's
# "click" event with the section id (listening on the container survives re-renders of its HTML).
TREE_CLICK_JS = """
element.addEventListener('click', (event) => {
  const target = event.target.closest('[data-section]');
  if (target) { trigger('click', {section: target.dataset.section}); }
});
"""
# Each row of the blocks list carries data-block (its index on the page).
BLOCKS_CLICK_JS = """
element.addEventListener('click', (event) => {
  const target = event.target.closest('[data-block]');
  if (target) { trigger('click', {block: target.dataset.block}); }
});
"""


@dataclass(slots=True)
class ParseTab:
    document: gr.Dropdown
    # Reloads the document picker: (workspace, current doc id) -> document dropdown update.
    refresh: Callable


def _grown(bbox: BBox, points: float) -> BBox:
    x0, y0, x1, y1 = bbox
    return (x0 - points, y0 - points, x1 + points, y1 + points)


def selection_highlights(block: Block) -> list[Highlight]:
    # render_page draws 2 px outlines; two rings around the box make the selection stand out
    # from the block boxes under it.
    return [
        Highlight(bbox=_grown(block.bbox, 2.0), color=SELECTED_COLOR),
        Highlight(bbox=_grown(block.bbox, 4.0), color=SELECTED_COLOR, label="selected"),
    ]


def page_image_html(png: bytes, page_no: int) -> str:
    """The page image, fitted to the column's width and scaled by the zoom (ZOOM_JS), in a box
    that scrolls when it is zoomed past the column."""
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<div class="st-page-scroll" data-page="{int(page_no)}"><img class="st-page-img" '
        f'alt="Page {int(page_no)} with its layout blocks" src="data:image/png;base64,{data}"></div>'
    )


def section_block(blocks: list[Block], section: Section) -> int | None:
    """Index of the block that is the section's heading on its page (by node id, else by box)."""
    for i, b in enumerate(blocks):
        if b.node == section.id:
            return i
    if section.bbox is not None:
        for i, b in enumerate(blocks):
            if all(abs(a - c) < 1.0 for a, c in zip(b.bbox, section.bbox)):
                return i
    return None


def build(service: Service, workspace: gr.State) -> ParseTab:
    with gr.Tab("Parse", id="parse"):
        with gr.Row(equal_height=True):
            document = gr.Dropdown(label="Document", choices=[], value=None, scale=3, elem_id="parse-document")
            page = gr.Number(value=1, precision=0, minimum=1, label="Page", scale=1, min_width=110, elem_id="parse-page")
            with gr.Column(scale=1, min_width=110):
                previous_button = gr.Button("◀ Previous", size="sm", elem_id="parse-previous")
                next_button = gr.Button("Next ▶", size="sm", elem_id="parse-next")
            jump = gr.Dropdown(label="Jump to section", choices=[], value=None, scale=3, elem_id="parse-jump")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                zoom = gr.Slider(*ZOOM_STEPS[:2], value=100, step=ZOOM_STEPS[2], label="Zoom (% of the column's width)",
                                 elem_id="parse-zoom")
                image = gr.HTML(elem_id="parse-page-image")
                gr.HTML(render.render_legend(BLOCK_COLORS), elem_id="parse-legend")
            with gr.Column(scale=2):
                gr.Markdown("#### Section tree  \nClick a section to show its page and heading.", elem_classes=["st-small"])
                tree = gr.HTML(NO_DOCUMENTS, elem_id="parse-tree", js_on_load=TREE_CLICK_JS)
        gr.Markdown("#### Selected unit")
        unit = gr.HTML(NO_SELECTION, elem_id="parse-unit")
        gr.Markdown("#### Blocks on this page, in reading order  \nClick a block to select it on the page.", elem_classes=["st-small"])
        blocks = gr.HTML(elem_id="parse-blocks", js_on_load=BLOCKS_CLICK_JS)

    def draw_page(ws: Path, doc_id: str, page_no: int, selected: int | Callable[[list[Block]], int | None] | None = None):
        """(view, image, blocks html, unit html) of a page; `selected` is a block index or picks one from the page's blocks."""
        view = service.page_view(ws, doc_id, page_no)
        index = selected(view.blocks) if callable(selected) else selected
        chosen = view.blocks[index] if index is not None and 0 <= index < len(view.blocks) else None
        highlights = service.block_highlights(view.blocks)
        if chosen is not None:
            highlights += selection_highlights(chosen)
        img = page_image_html(service.png_bytes(service.render_page(ws, doc_id, view.page, highlights, dpi=PAGE_DPI)), view.page)
        unit_html = NO_SELECTION
        if chosen is not None:
            table = service.table_view(ws, chosen.node) if chosen.kind == BlockKind.TABLE and chosen.node else None
            unit_html = render.render_unit(chosen, index + 1, BLOCK_COLORS.get(chosen.kind, "#000000"), table)
        return view, img, render.render_blocks(view.blocks, BLOCK_COLORS, index if chosen is not None else None), unit_html

    def sections_of(ws: Path, doc_id: str) -> list[Section]:
        return service.sections(ws, doc_id)

    @user_errors
    def refresh(workspace_value: str, current: str | None):
        docs = service.documents(session_workspace(workspace_value))
        ids = [d.id for d in docs]
        value = current if current in ids else (ids[0] if ids else None)
        return gr.update(choices=render.document_choices(docs), value=value)

    @user_errors
    def show_document(workspace_value: str, doc_id: str | None):
        if not doc_id:
            return gr.update(maximum=1, value=1, label="Page"), gr.update(choices=[], value=None), NO_DOCUMENTS, "", "", NO_SELECTION
        ws = session_workspace(workspace_value)
        view, img, blocks_html, unit_html = draw_page(ws, doc_id, 1)
        sections = sections_of(ws, doc_id)
        return (
            gr.update(maximum=view.pages, value=1, label=f"Page (of {view.pages})"),
            gr.update(choices=render.section_choices(sections), value=None),
            render.render_section_tree(sections, page=1),
            img,
            blocks_html,
            unit_html,
        )

    @user_errors
    def show_page(workspace_value: str, doc_id: str | None, page_no: float | None, step: int = 0):
        if not doc_id:
            return gr.skip(), gr.skip(), "", "", NO_DOCUMENTS, NO_SELECTION
        ws = session_workspace(workspace_value)
        view, img, blocks_html, unit_html = draw_page(ws, doc_id, int(page_no or 1) + step)  # page_view clamps to 1..pages
        tree_html = render.render_section_tree(sections_of(ws, doc_id), page=view.page)
        return view.page, gr.update(value=None), img, blocks_html, tree_html, unit_html

    @user_errors
    def show_section(workspace_value: str, doc_id: str | None, section_id: str | None):
        if not doc_id or not section_id:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        ws = session_workspace(workspace_value)
        sections = sections_of(ws, doc_id)
        section = next((s for s in sections if s.id == section_id), None)
        if section is None:
            raise gr.Error("That section is not in the chosen document any more; pick another one.")
        view, img, blocks_html, unit_html = draw_page(ws, doc_id, section.page, lambda page_blocks: section_block(page_blocks, section))
        tree_html = render.render_section_tree(sections, current=section.id, page=view.page)
        return view.page, img, blocks_html, tree_html, unit_html

    @user_errors
    def show_block(workspace_value: str, doc_id: str | None, page_no: float | None, block: str | None):
        if not doc_id or block is None or not str(block).isdigit():
            return gr.skip(), gr.skip(), gr.skip()
        _, img, blocks_html, unit_html = draw_page(session_workspace(workspace_value), doc_id, int(page_no or 1), int(block))
        return img, blocks_html, unit_html

    def on_tree_click(workspace_value: str, doc_id: str | None, evt: gr.EventData):
        section_id = getattr(evt, "section", None)  # set by TREE_CLICK_JS
        return show_section(workspace_value, doc_id, section_id)

    def on_block_click(workspace_value: str, doc_id: str | None, page_no: float | None, evt: gr.EventData):
        return show_block(workspace_value, doc_id, page_no, getattr(evt, "block", None))  # set by BLOCKS_CLICK_JS

    zoom.input(None, inputs=[zoom], js=ZOOM_JS, **PRIVATE)
    document.change(
        show_document, inputs=[workspace, document], outputs=[page, jump, tree, image, blocks, unit], trigger_mode="always_last",
        **PRIVATE,
    )
    page_outputs_list = [page, jump, image, blocks, tree, unit]
    page.submit(show_page, inputs=[workspace, document, page], outputs=page_outputs_list, trigger_mode="always_last", **PRIVATE)
    page.blur(show_page, inputs=[workspace, document, page], outputs=page_outputs_list, trigger_mode="always_last", **PRIVATE)
    previous_button.click(
        lambda w, d, p: show_page(w, d, p, -1), inputs=[workspace, document, page], outputs=page_outputs_list, **PRIVATE
    )
    next_button.click(
        lambda w, d, p: show_page(w, d, p, 1), inputs=[workspace, document, page], outputs=page_outputs_list, **PRIVATE
    )
    section_outputs = [page, image, blocks, tree, unit]
    jump.input(show_section, inputs=[workspace, document, jump], outputs=section_outputs, **PRIVATE)
    tree.click(on_tree_click, inputs=[workspace, document], outputs=section_outputs, **PRIVATE)
    blocks.click(on_block_click, inputs=[workspace, document, page], outputs=[image, blocks, unit], **PRIVATE)
    return ParseTab(document=document, refresh=refresh)
