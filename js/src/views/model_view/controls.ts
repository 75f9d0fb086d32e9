// ModelView's controls: the toolbar (kind, thumbnail reduction, measure, selection, export), hover and click on the
// grid (choose a head) and on the detail (select query rows), and the keys (arrows choose a head; Shift+arrows and
// Escape the selection).

import { type HeatmapLayout, cellAt } from "../../draw/layout";
import { reduceMenu } from "../../draw/long_context";
import { measureToggle } from "../../draw/measure";
import { arrowKeysSelect, clickToSelect, sameHead } from "../../draw/selection";
import * as span from "../../draw/span";
import { hoverTooltip } from "../../draw/tooltip";
import { NO_ZOOM, rowAtZoom } from "../../draw/zoom";
import { h, listen, menu, resetControls, typedInControl } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import type { ModelViewTraits } from "./state";

type Model = WidgetModel<ModelViewTraits>;

/** (Re)build the toolbar. */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  controls: Array<() => void>,
  spans: span.SpanSelector,
  exportControls: (list: Array<() => void>) => HTMLElement,
): void {
  resetControls(controls, bar);
  const m = model.get("_meta");
  if (m.kinds.length > 1) {
    const options = m.kinds.map((k): [string, string] => [k, k]);
    const kindSel = menu(controls, options, model.get("kind"), "attention kind", "kind-select", (v) =>
      saveTraits(model, { kind: v, layer: 0, head: 0 }),
    );
    bar.append(h("label", {}, "attention", kindSel));
  }
  const reduceSel = reduceMenu(controls, model.get("reduce"), "thumbnail reduction", (v) =>
    saveTraits(model, { reduce: v }),
  );
  bar.append(h("label", {}, "thumbnails", reduceSel));
  const measure = measureToggle(model, m, controls);
  if (measure) bar.append(measure);
  bar.append(
    h("span", { className: "aw-muted", text: "click a thumbnail to open that head · arrow keys move" }),
    span.spanControls(model, spans, controls),
    exportControls(controls),
  );
}

/** A mouse event's CSS pixel in `canvas`. */
function at(canvas: HTMLElement, e: MouseEvent): { x: number; y: number } {
  const r = canvas.getBoundingClientRect();
  return { x: e.clientX - r.left, y: e.clientY - r.top };
}

/** What the grid's and the detail's listeners read and change. */
export interface PointerHooks {
  thumbAt(x: number, y: number): { layer: number; head: number } | null;
  thumbTip(at: { layer: number; head: number }): string;
  setThumbHover(at: { layer: number; head: number } | null): void; // and paint the grid
  chosen(): void; // a head was chosen (the traits are set and synced): show it
  detailLayout(): HeatmapLayout | null; // null until a head is painted
  cellTip(cell: { q: number; k: number }): { text: string; data: Record<string, string> };
  setCellHover(cell: { q: number; k: number } | null): void; // and paint the detail
  full(): boolean; // the detail is at full resolution (an overview's rows are blocks of tokens)
}

/** Hover and click on the grid (choose a head) and on the detail (select a query row, a cell or its label). */
export function pointerListeners(
  model: Model,
  parts: { grid: HTMLCanvasElement; detail: HTMLCanvasElement; root: HTMLElement; tooltip: HTMLElement },
  spans: span.SpanSelector,
  hooks: PointerHooks,
): Array<() => void> {
  const { grid, detail, root, tooltip } = parts;
  const thumbFor = (e: MouseEvent) => {
    const p = at(grid, e);
    return hooks.thumbAt(p.x, p.y);
  };
  return [
    ...hoverTooltip(grid, root, tooltip, {
      flip: false,
      hitAt: thumbFor,
      same: sameHead,
      tip: (hit) => ({ text: hooks.thumbTip(hit), data: {} }),
      changed: hooks.setThumbHover,
    }),
    clickToSelect(grid, model, thumbFor, hooks.chosen),
    ...hoverTooltip(detail, root, tooltip, {
      flip: false,
      hitAt: (e) => {
        const l = hooks.detailLayout();
        const p = at(detail, e);
        return l ? cellAt(l, p.x, p.y) : null;
      },
      same: (a, b) => a.q === b.q && a.k === b.k,
      tip: hooks.cellTip,
      changed: hooks.setCellHover,
    }),
    listen(detail, "click", (e: MouseEvent) => {
      const l = hooks.detailLayout();
      if (!l || !hooks.full()) return;
      const p = at(detail, e);
      const q = rowAtZoom(l, NO_ZOOM, p.x, p.y);
      if (q !== null) spans.click(q, e);
    }),
  ];
}

/** The keys: Shift+↑ ↓ and Escape the selection of the head's `rows()` query rows, the arrows choose a head. */
export function keyListeners(
  model: Model,
  root: HTMLElement,
  spans: span.SpanSelector,
  rows: () => number,
  chosen: () => void,
): Array<() => void> {
  return [
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e) || !spans.keydown(e, rows())) return;
      if (e.shiftKey) e.stopImmediatePropagation(); // a span step, not a layer step
      e.preventDefault();
    }),
    arrowKeysSelect(root, model, () => model.get("_meta").shapes[model.get("kind")] ?? [0, 0], chosen),
  ];
}
