// FillMask: type a sentence with [MASK]; the model's top-k fillers per [MASK] as bars with probabilities, and the
// attention of one [MASK] position over the tokens (layer / head menus, head -1 = the layer's mean). Mirrors
// attnwidgets/widgets/fill_mask.py. Typing sets the synced `text` trait (Enter or leaving the box); Python fills it
// in again and sends a new payload. Token text is drawn on canvases or set as textContent, never as markup.
// This file wires the parts up: state.ts (what to show), paint.ts (bars and row), controls.ts (menus, box, clicks).

import { roomFor } from "../../draw/heads";
import { lensCss, paintLens } from "../../draw/lens";
import { tooltipBox } from "../../draw/tooltip";
import { type Matrix, decode } from "../../shared/buffers";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, needsKernel, onModel } from "../../shared/model";
import { userText } from "../../shared/text";
import { applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import { buildControls, pickMask, pickRows, rowHover, sentenceBox } from "./controls";
import { paintFills, paintRow } from "./paint";
import {
  type FillMaskTraits,
  type FillsLayout,
  attentionRow,
  fillCaption,
  fillTitle,
  pictureWidth,
  rowTitle,
  selectionRow,
  shownRows,
} from "./state";

export type { FillMaskTraits } from "./state";

const CSS = `
.aw-fill-mask .aw-fill-sentence { flex: 1 1 100%; min-width: 0; }
.aw-fill-mask input.aw-fill-text[type="text"] { font: inherit; flex: 0 1 32em; width: auto; min-width: 4em;
  padding: 2px 6px; }
.aw-fill-mask canvas { display: block; }
.aw-fill-mask .aw-fill-top { display: flex; flex-wrap: wrap; align-items: flex-start; column-gap: 1.5em; }
.aw-fill-mask .aw-fill-head { flex: 1 1 14em; max-width: 28em; margin-bottom: 0.5em; }
.aw-fill-mask .aw-fill-bars { display: flex; flex-direction: column; width: min-content; }
.aw-fill-mask .aw-fill-bars .aw-fill-head { flex: none; max-width: none; margin-top: 0.3em; }
${lensCss(".aw-fill-mask")}`;

/** The sentence box, the two canvases and the texts around them. */
function fillDom() {
  const input = h("input", {
    type: "text",
    className: "aw-fill-text",
    "aria-label": "sentence with [MASK]",
    "data-testid": "fill-text",
    spellcheck: "false",
  });
  return {
    input,
    // the box shrinks with a narrow output (a 32em box in a percentage of an inline label ran past a 600 px one)
    inputRow: h(
      "div",
      { className: "aw-bar" },
      h("label", { className: "aw-fill-sentence" }, "sentence", input),
    ),
    fillsCanvas: h("canvas", { className: "aw-canvas", "data-testid": "fills-canvas" }),
    rowCanvas: h("canvas", { className: "aw-canvas", "data-testid": "row-canvas" }),
    rowTitle: h("div", { className: "aw-muted", "data-testid": "row-title", "data-export-text": "" }),
    caption: h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" }),
    lens: h("div", { className: "aw-lens", "data-testid": "lens" }),
    // whose guesses the bars are (the shipped head and its measured top-1), beside the bars where there is room
    headNote: h("div", {
      className: "aw-muted aw-fill-head",
      "data-testid": "head-note",
      "data-export-text": "",
    }),
  };
}

function render({ model, el }: RenderProps<FillMaskTraits>): () => void {
  const shell = widgetShell(model, el, "aw-fill-mask", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const dom = fillDom();
  const tooltip = tooltipBox();
  // the bars, and under them the head note while the lens table is shown (paint moves it)
  const bars = h("div", { className: "aw-fill-bars" }, dom.fillsCanvas);
  // the lens table beside the bars it explains (its last row is the bars' fill-in)
  const top = h("div", { className: "aw-fill-top" }, bars, dom.lens, dom.headNote);
  root.append(title, dom.inputRow, bar, errorBox, top, dom.rowTitle, dom.rowCanvas, dom.caption, tooltip);

  let rows: Float32Array = new Float32Array(0);
  let attention: Float32Array | null = null; // every query row (layers, heads, n, n), when Python sent it
  let lensProbs: Matrix | null = null; // (masks, layers + 1, k)
  let columns = { x0: 0, colW: 0 };
  let panels: FillsLayout | null = null; // the bars' panels, one per [MASK]: a click picks that [MASK]
  const controls = controlGroup(cleanups);
  // The pictures are as wide as the widget (the row title spans it); drawn again when that width changes.
  let measured = 0;
  const resize = new ResizeObserver(() => {
    if (dom.rowTitle.clientWidth === measured) return;
    measured = dom.rowTitle.clientWidth;
    paint();
  });
  resize.observe(dom.rowTitle);
  cleanups.push(() => resize.disconnect());
  /** The panel's row: the combine of the selected query rows, or with nothing selected the [MASK]'s row. */
  const values = () => {
    const shape = model.get("_meta").shape;
    const [m, layer, head] = [
      Math.min(model.get("mask"), shape[0] - 1),
      model.get("layer"),
      model.get("head"),
    ];
    const selection = model.get("selection") ?? [];
    if (!rows.length) return new Float32Array((model.get("_payload").tokens ?? []).length);
    if (!selection.length || !attention) return attentionRow(rows, shape, m, layer, head);
    const n = shape[3];
    return selectionRow(attention, [shape[1], shape[2], n, n], layer, head, selection, model.get("combine"));
  };

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const meta = model.get("_meta");
    title.textContent = fillTitle(userText(meta.model ?? ""), meta.head ?? ""); // head: only tested, not shown
    if (document.activeElement !== dom.input) dom.input.value = model.get("text");
    const p = model.get("_payload");
    const room = pictureWidth(measured, roomFor(el), t.name);
    panels = paintFills(dom.fillsCanvas, p, model.get("mask"), t, room);
    const m = Math.min(model.get("mask"), model.get("_meta").shape[0] - 1);
    const [layer, head, selection] = [model.get("layer"), model.get("head"), model.get("selection") ?? []];
    const positions = p.positions ?? [];
    columns = paintRow(dom.rowCanvas, p, values(), shownRows(selection, positions, m), t, room);
    const tokens = (p.tokens ?? []).map((tok) => userText(tok));
    const combine = model.get("combine");
    dom.rowTitle.textContent = rowTitle(m, layer, head, { tokens, positions, selection, combine });
    dom.headNote.textContent = userText(meta.head ?? "");
    // Beside the bars, or under them while the lens table takes the room beside them: there it wrapped under both
    // and pushed the attention row below a 720p screen.
    const home = model.get("lens") && p.lens ? bars : top;
    if (dom.headNote.parentElement !== home) home.append(dom.headNote);
    dom.caption.textContent = fillCaption((p.fills ?? []).length);
    dom.rowCanvas.title = attention
      ? "click a token to see where it attends; shift-click a span, ctrl/cmd-click to add one, Escape: the [MASK]"
      : "";
    // the layer's row (the stream after it: row layer + 1) outlined
    paintLens(dom.lens, p.lens, lensProbs, m, {
      show: Boolean(model.get("lens")),
      highlight: layer + 1,
      heading: `logit lens at [MASK] #${m + 1}, by layer`,
    });
  }

  function load(): void {
    try {
      const payload = model.get("_payload");
      rows = decode(payload.rows).data;
      attention = payload.attention ? decode(payload.attention).data : null;
      lensProbs = payload.lens ? decode(payload.lens.probs) : null;
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    buildControls(model, bar, shell.exportControls, controls);
    paint();
  }

  cleanups.push(
    ...sentenceBox(model, dom.input),
    pickMask(model, dom.fillsCanvas, () => panels),
    ...rowHover(model, dom.rowCanvas, root, tooltip, { columns: () => columns, values }),
    ...pickRows(model, dom.rowCanvas, root, () => columns),
    onModel(model, "change:selection", () => {
      buildControls(model, bar, shell.exportControls, controls); // the clear button's state
      paint();
    }),
    onModel(model, "change:combine", paint),
    onModel(model, "change:_payload", load),
    onModel(model, "change:_meta", load),
    onModel(model, "change:layer", paint),
    onModel(model, "change:head", paint),
    onModel(model, "change:mask", () => {
      buildControls(model, bar, shell.exportControls, controls);
      paint();
    }),
    onModel(model, "change:theme", paint),
    onModel(model, "change:lens", () => {
      buildControls(model, bar, shell.exportControls, controls);
      paint();
    }),
    onModel(model, "change:text", () => {
      if (document.activeElement !== dom.input) dom.input.value = model.get("text");
    }),
  );
  void errorBox;
  needsKernel(model, dom.input); // another sentence is a model run: saved without a kernel, the box says it needs one
  load();
  return shell.close;
}

export default { render };
