// PositionalExplorer's controls: the encoding menu, the length slider, and per encoding the width slider, the
// similarity menu, or the heads and head sliders with the causal box; the panels' tooltips.

import { panelCellAt, slider } from "../../draw/teaching";
import { hideTooltip, showTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import type { Drawn, PanelBox } from "./paint";
import { ENCODINGS, type Editable, type PositionalTraits, cellTip, controlsFor, headsChange } from "./state";

type Model = WidgetModel<PositionalTraits>;
type Update = (changes: Partial<Editable>) => void;

/** The ALiBi / T5 controls: how many heads, which head, causal. */
function headControls(model: Model, update: Update, list: Array<() => void>): HTMLElement[] {
  const nHeads = model.get("n_heads");
  const heads = { min: 1, max: 16, value: nHeads, testid: "heads-slider" };
  const head = { min: 0, max: Math.max(nHeads - 1, 0), value: model.get("head"), testid: "head-slider" };
  const box = h("input", { type: "checkbox", "aria-label": "causal", "data-testid": "causal-box" });
  box.checked = model.get("causal");
  list.push(listen(box, "change", () => update({ causal: box.checked })));
  return [
    slider("heads", heads, (v) => update(headsChange(v, model.get("head"))), list).wrap,
    slider("head", head, (v) => update({ head: v }), list).wrap,
    h("label", {}, box, "causal (decoder)"),
  ];
}

/** The controls encoding `enc` has; listeners go to `list`. */
export function encodingControls(model: Model, update: Update, list: Array<() => void>): HTMLElement[] {
  const meta = model.get("_meta");
  const enc = model.get("encoding");
  const encSel = select(ENCODINGS, enc, "encoding");
  encSel.dataset.testid = "encoding-select";
  list.push(listen(encSel, "change", () => update({ encoding: encSel.value })));
  const length = { min: 2, max: meta.max_length ?? 512, value: model.get("length"), testid: "length-slider" };
  const out: HTMLElement[] = [
    h("label", {}, "encoding", encSel),
    slider("length", length, (v) => update({ length: v }), list).wrap,
  ];
  const shown = controlsFor(enc, meta.has_table);
  if (shown.width) {
    const width = {
      min: 2,
      max: meta.max_d_model ?? 512,
      step: 2,
      value: model.get("d_model"),
      testid: "dmodel-slider",
    };
    out.push(slider(shown.width, width, (v) => update({ d_model: v }), list).wrap);
  }
  if (shown.similarity) {
    const options: Array<[string, string]> = [
      ["cosine", "cosine"],
      ["dot", "dot product"],
    ];
    const sim = select(options, model.get("similarity"), "similarity");
    sim.dataset.testid = "similarity-select";
    list.push(listen(sim, "change", () => update({ similarity: sim.value })));
    out.push(h("label", {}, "similarity", sim));
  }
  if (shown.heads) out.push(...headControls(model, update, list));
  return out;
}

/** (Re)build the bar. */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  exportControls: (list: Array<() => void>) => HTMLElement,
  list: Array<() => void>,
  update: Update,
): void {
  resetControls(list, bar);
  bar.append(...encodingControls(model, update, list), exportControls(list));
}

/** Each panel's tooltip: the cell's row, column and value. */
export function panelHover(
  boxes: PanelBox[],
  drawn: () => Drawn[],
  tooltip: HTMLElement,
  root: HTMLElement,
): Array<() => void> {
  return boxes.flatMap((b, i) => [
    listen(b.canvas, "mousemove", (e: MouseEvent) => {
      const d = drawn()[i];
      if (!d) return;
      const rect = b.canvas.getBoundingClientRect();
      const cell = panelCellAt(d.geom, e.clientX - rect.left, e.clientY - rect.top);
      if (!cell) {
        hideTooltip(tooltip);
        return;
      }
      const at = cell.row * d.geom.cols + cell.col;
      const v = d.data[at];
      const text = cellTip(d.panel, v, d.extra ? d.extra[at] : null, cell.row, cell.col);
      showTooltip(tooltip, root, e, text, { value: String(v), panel: String(i) });
    }),
    listen(b.canvas, "mouseleave", () => {
      hideTooltip(tooltip);
    }),
  ]);
}
