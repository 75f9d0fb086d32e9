// AttentionHeatmap's controls: the toolbar (kind, layer, head, zoom buttons, overview reduction, sink discount,
// words, measure, selection, export), the mouse on the map (hover, wheel zoom, drag to pan, click to select rows)
// and the keys.

import type { HeatmapLayout } from "../../draw/layout";
import { reduceMenu } from "../../draw/long_context";
import { measureToggle } from "../../draw/measure";
import * as span from "../../draw/span";
import { hideTooltip, hoverTooltip } from "../../draw/tooltip";
import { type Zoom, cellAtZoom, panBy, rowAtZoom, zoomAt } from "../../draw/zoom";
import { h, listen, menu, resetControls, typedInControl } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import { type HeatmapTraits, type ViewChange, ZOOM_STEP, keyAction } from "./state";

type Model = WidgetModel<HeatmapTraits>;

/** What the controls do to the view. */
export interface ViewHooks {
  update(changes: ViewChange): void; // save the traits and fetch the new map
  zoomBy(factor: number): void; // about the grid's centre
  zoomReset(): void;
  spans: span.SpanSelector;
  exportControls(list: Array<() => void>): HTMLElement;
}

/** The kind, layer and head menus (head -1: the mean of the layer's heads). */
function viewMenus(model: Model, controls: Array<() => void>, hooks: ViewHooks): HTMLElement[] {
  const m = model.get("_meta");
  const kind = model.get("kind");
  const [nLayers, nHeads] = m.shapes[kind] ?? [0, 0];
  const out: HTMLElement[] = [];
  if (m.kinds.length > 1) {
    const options = m.kinds.map((k): [string, string] => [k, k]);
    const kindSel = menu(controls, options, kind, "attention kind", "kind-select", (v) =>
      hooks.update({ kind: v, layer: 0, head: 0 }),
    );
    out.push(h("label", {}, "attention", kindSel));
  }
  const layers = Array.from({ length: nLayers }, (_, i): [string, string] => [String(i), String(i)]);
  const layerSel = menu(controls, layers, String(model.get("layer")), "layer", "layer-select", (v) =>
    hooks.update({ layer: Number(v) }),
  );
  const heads: Array<[string, string]> = [["-1", "mean of heads"]];
  for (let i = 0; i < nHeads; i++) heads.push([String(i), String(i)]);
  const headSel = menu(controls, heads, String(model.get("head")), "head", "head-select", (v) =>
    hooks.update({ head: Number(v) }),
  );
  out.push(h("label", {}, "layer", layerSel), h("label", {}, "head", headSel));
  return out;
}

/** The + − 1:1 zoom buttons. */
function zoomButtons(controls: Array<() => void>, hooks: ViewHooks): HTMLElement {
  const button = (text: string, testid: string, label: string, fn: () => void) => {
    const b = h("button", { type: "button", text, "data-testid": testid, "aria-label": label, title: label });
    controls.push(listen(b, "click", fn));
    return b;
  };
  return h(
    "span",
    { className: "aw-zoom" },
    button("+", "zoom-in", "zoom in (or wheel, +)", () => hooks.zoomBy(ZOOM_STEP)),
    button("−", "zoom-out", "zoom out (or wheel, -)", () => hooks.zoomBy(1 / ZOOM_STEP)),
    button("1:1", "zoom-reset", "whole matrix (0)", () => hooks.zoomReset()),
  );
}

/** The colour scale's switches: how an overview merges a block, and whether the sink keys are discounted. */
function scaleSwitches(model: Model, controls: Array<() => void>): HTMLElement[] {
  const reduceSel = reduceMenu(controls, model.get("reduce"), "overview reduction", (v) =>
    saveTraits(model, { reduce: v }),
  );
  reduceSel.title = "how an overview of a long input merges a block of cells";
  const sinkBox = h("input", {
    type: "checkbox",
    "aria-label": "discount attention sinks",
    "data-testid": "discount-sinks",
  });
  const discount = model.get("discount_sinks");
  sinkBox.checked = Array.isArray(discount) ? discount.length > 0 : Boolean(discount);
  controls.push(listen(sinkBox, "change", () => saveTraits(model, { discount_sinks: sinkBox.checked })));
  const sinkTitle = "top the colour scale at the largest weight on other keys than the sink (key 0)";
  return [h("label", {}, "overview", reduceSel), h("label", { title: sinkTitle }, sinkBox, "discount sink")];
}

/** (Re)build the toolbar. */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  controls: Array<() => void>,
  hooks: ViewHooks,
): void {
  resetControls(controls, bar);
  const m = model.get("_meta");
  bar.append(
    ...viewMenus(model, controls, hooks),
    zoomButtons(controls, hooks),
    ...scaleSwitches(model, controls),
  );
  if (m.can_words) {
    const box = h("input", { type: "checkbox", "aria-label": "word level" });
    box.checked = model.get("words");
    controls.push(listen(box, "change", () => hooks.update({ words: box.checked })));
    bar.append(h("label", {}, box, "words"));
  }
  const measure = measureToggle(model, m, controls);
  if (measure) bar.append(measure);
  bar.append(span.spanControls(model, hooks.spans, controls), hooks.exportControls(controls));
}

/** What the mouse on the map reads and changes. */
export interface PointerHooks {
  layout(): HeatmapLayout | null; // null until the first paint
  zoom(): Zoom;
  setZoom(z: Zoom): void; // clamp and paint
  tip(cell: { q: number; k: number }): { text: string; data: Record<string, string> };
  setHover(cell: { q: number; k: number } | null): void; // and paint
  clickRow(q: number, e: MouseEvent): void;
}

/** CSS pixel of a mouse event in `canvas`. */
function at(canvas: HTMLElement, e: MouseEvent): { x: number; y: number } {
  const r = canvas.getBoundingClientRect();
  return { x: e.clientX - r.left, y: e.clientY - r.top };
}

/** Hover (tooltip, outline), wheel zoom about the pointer, drag to pan, click to select a query row. */
export function pointerListeners(
  canvas: HTMLCanvasElement,
  root: HTMLElement,
  tooltip: HTMLElement,
  hooks: PointerHooks,
): Array<() => void> {
  let drag: { x: number; y: number; at: Zoom; moved: boolean } | null = null;
  let dragged = false; // the last press panned: its click selects nothing
  const cellOf = (e: MouseEvent) => {
    const l = hooks.layout();
    const p = at(canvas, e);
    return l ? cellAtZoom(l, hooks.zoom(), p.x, p.y) : null;
  };
  const hover = hoverTooltip(canvas, root, tooltip, {
    flip: false,
    skip: () => drag !== null, // the window's listener pans
    hitAt: (e) => {
      const cell = cellOf(e);
      canvas.style.cursor = cell && hooks.zoom().z > 1 ? "grab" : "default";
      return cell;
    },
    same: (a, b) => a.q === b.q && a.k === b.k,
    tip: hooks.tip,
    changed: hooks.setHover,
  });
  return [
    ...hover,
    listen(
      canvas,
      "wheel",
      (e: WheelEvent) => {
        const l = hooks.layout();
        if (!l || !cellOf(e)) return; // outside the grid the page scrolls as usual
        e.preventDefault();
        const p = at(canvas, e);
        hooks.setZoom(zoomAt(l, hooks.zoom(), Math.exp(-e.deltaY * 0.002), p.x, p.y));
      },
      { passive: false },
    ),
    listen(canvas, "mousedown", (e: MouseEvent) => {
      if (e.button !== 0 || !cellOf(e)) return;
      drag = { x: e.clientX, y: e.clientY, at: hooks.zoom(), moved: false };
      e.preventDefault();
    }),
    listen(window, "mousemove", (e: MouseEvent) => {
      const l = hooks.layout();
      if (!drag || !l) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 3) return;
      drag.moved = true;
      hideTooltip(tooltip);
      canvas.style.cursor = "grabbing";
      hooks.setZoom(panBy(l, drag.at, dx, dy));
    }),
    listen(window, "mouseup", () => {
      dragged = drag?.moved ?? false;
      drag = null;
    }),
    listen(canvas, "click", (e: MouseEvent) => {
      const l = hooks.layout();
      const p = at(canvas, e);
      const q = dragged || !l ? null : rowAtZoom(l, hooks.zoom(), p.x, p.y);
      dragged = false;
      if (q !== null) hooks.clickRow(q, e);
    }),
  ];
}

/** The keys on the view: ← → heads, ↑ ↓ layers, + − 0 zoom, Shift+↑ ↓ and Escape the selection of the map's
 * `rows()` query rows (not while typing in a menu, where arrows step its options). */
export function keyListener(
  model: Model,
  root: HTMLElement,
  hooks: ViewHooks & { rows(): number; rebuild(): void },
): () => void {
  return listen(root, "keydown", (e: KeyboardEvent) => {
    if (typedInControl(e)) return;
    const kind = model.get("kind");
    if (hooks.spans.keydown(e, hooks.rows())) {
      e.preventDefault();
      return;
    }
    const view = { kind, layer: model.get("layer"), head: model.get("head"), words: model.get("words") };
    const action = keyAction(e.key, view, model.get("_meta").shapes[kind] ?? [0, 0]);
    if (!action) return;
    if ("view" in action) hooks.update(action.view);
    else if ("zoomBy" in action) hooks.zoomBy(action.zoomBy);
    else hooks.zoomReset();
    e.preventDefault();
    hooks.rebuild();
  });
}
