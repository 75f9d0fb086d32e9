// QKStepThrough's controls: the layer, head and query menus, the window's ◀ ▶, the arrow keys, hover and click on
// the panels.

import { type SpanSelector, oneQuery, selectQuery } from "../../draw/span";
import { hideTooltip, showTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select, typedInControl } from "../../shared/dom";
import { exportButtons, safeName } from "../../shared/export";
import type { WidgetModel } from "../../shared/model";
import { onModel, saveTraits } from "../../shared/model";
import { isolate, tokenLabel } from "../../shared/text";
import { type QKTraits, arrowStep, isWindowed, stepWindowRange } from "./state";

export type QKChange = Partial<Pick<QKTraits, "layer" | "head" | "query" | "selection">>;

/** The ◀ keys m–n of N ▶ pager of a window. */
function windowNav(model: WidgetModel<QKTraits>, controls: Array<() => void>): HTMLElement {
  const nk = model.get("_meta").key_tokens.length;
  const w = model.get("window");
  const prev = h("button", {
    type: "button",
    "data-testid": "window-prev",
    title: "previous keys",
    text: "◀",
  });
  const next = h("button", { type: "button", "data-testid": "window-next", title: "next keys", text: "▶" });
  prev.disabled = w[0] <= 0;
  next.disabled = w[1] >= nk;
  const step = (dir: number) => saveTraits(model, { window: stepWindowRange(w, nk, dir) });
  controls.push(
    listen(prev, "click", () => step(-1)),
    listen(next, "click", () => step(1)),
  );
  return h(
    "span",
    { className: "aw-window-nav" },
    prev,
    h("span", { "data-testid": "window-label", text: `keys ${w[0]}–${w[1] - 1} of ${nk}` }),
    next,
  );
}

/** (Re)build the toolbar: layer, head and query menus, the window pager, the export buttons. */
export function buildControls(
  model: WidgetModel<QKTraits>,
  root: HTMLElement,
  bar: HTMLElement,
  controls: Array<() => void>,
  update: (changes: QKChange) => void,
): void {
  resetControls(controls, bar);
  const m = model.get("_meta");
  const layerSel = select(
    m.layers.map((l) => [String(l), String(l)]),
    String(model.get("layer")),
    "layer",
  );
  layerSel.dataset.testid = "layer-select";
  controls.push(listen(layerSel, "change", () => update({ layer: Number(layerSel.value) })));
  const heads: Array<[string, string]> = [];
  for (let i = 0; i < m.n_heads; i++) heads.push([String(i), String(i)]);
  const headSel = select(heads, String(model.get("head")), "head");
  headSel.dataset.testid = "head-select";
  controls.push(listen(headSel, "change", () => update({ head: Number(headSel.value) })));
  const querySel = select(
    m.tokens.map((t, i) => [String(i), `${i}: ${isolate(tokenLabel(t, 32))}`]),
    String(model.get("query")),
    "query token",
  );
  querySel.dataset.testid = "query-select";
  controls.push(listen(querySel, "change", () => update({ query: Number(querySel.value) })));
  bar.append(
    h("label", {}, "layer", layerSel),
    h("label", {}, "head", headSel),
    h("label", {}, "query", querySel),
    ...(isWindowed(m, model.get("window")) ? [windowNav(model, controls)] : []),
    exportButtons(root, () => safeName(`qk_${model.get("layer")}_${model.get("head")}`), controls),
  );
}

/** The arrow keys on the view: → ← heads, ↓ ↑ layers (not while typing in a menu). */
export function arrowKeys(
  model: WidgetModel<QKTraits>,
  root: HTMLElement,
  update: (changes: QKChange) => void,
): () => void {
  return listen(root, "keydown", (e: KeyboardEvent) => {
    if (typedInControl(e)) return; // arrows in a menu step its options, not the view
    const step = arrowStep(model.get("_meta"), model.get("layer"), model.get("head"), e.key);
    if (!step) return;
    update(step);
    e.preventDefault();
  });
}

/** A key row under the pointer, and the pointer's x in its canvas. */
export type RowHit = { j: number; x: number };

/** What the panels' listeners read and change in the view. */
export interface PanelHooks {
  rowAt: (canvas: HTMLCanvasElement, e: MouseEvent) => RowHit | null;
  tip: (id: string, hit: RowHit) => string;
  hoverRow: () => number;
  setHover: (j: number) => void; // and repaint
  pickQuery: (hit: RowHit, mods: MouseEvent) => void; // a click on a key token in panel 1 (shift/ctrl extend)
}

/**
 * Hover on every panel's canvas (the tooltip explains the key, the row is shaded in every panel), leave, and a click
 * on a token in panel 1, which selects it (the selection's click rules: it becomes the query).
 */
export function panelListeners(
  canvases: Record<string, HTMLCanvasElement>,
  ids: string[],
  tooltip: HTMLElement,
  root: HTMLElement,
  hooks: PanelHooks,
): Array<() => void> {
  const out: Array<() => void> = [];
  for (const id of ids) {
    const canvas = canvases[id];
    out.push(
      listen(canvas, "mousemove", (e: MouseEvent) => {
        const hit = hooks.rowAt(canvas, e);
        if (!hit) {
          hideTooltip(tooltip);
          if (hooks.hoverRow() !== -1) hooks.setHover(-1);
          return;
        }
        showTooltip(tooltip, root, e, hooks.tip(id, hit), { row: String(hit.j) }, false);
        if (hooks.hoverRow() !== hit.j) hooks.setHover(hit.j);
      }),
      listen(canvas, "mouseleave", () => {
        hideTooltip(tooltip);
        hooks.setHover(-1);
      }),
    );
  }
  const labelled = canvases.pre ?? canvases.qk; // the panel with the key labels (a rotary model's first)
  out.push(
    listen(labelled, "click", (e: MouseEvent) => {
      const hit = hooks.rowAt(labelled, e);
      if (hit) hooks.pickQuery(hit, e);
    }),
  );
  return out;
}

/** `changes` with the selection a query chosen outside it makes: that query alone (span.selectQuery; widgets/qk.py
 * does the same in Python). */
export function withSelection(changes: QKChange, selection: number[]): QKChange {
  if (changes.query === undefined || changes.selection) return changes;
  const sel = selectQuery(selection, changes.query);
  return sel === selection ? changes : { ...changes, selection: sel };
}

/** The selection's listeners: Escape clears it, and a selection (a click in panel 1, or a linked view's) moves the
 * query to one of its tokens (span.oneQuery); otherwise only panel 1's marks change (`paint`). */
export function followSelection(
  model: WidgetModel<QKTraits>,
  root: HTMLElement,
  picker: SpanSelector,
  update: (changes: QKChange) => void,
  paint: () => void,
): Array<() => void> {
  return [
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Escape" && (model.get("selection") ?? []).length) picker.clear();
    }),
    onModel(model, "change:selection", () => {
      const q = oneQuery(model.get("selection") ?? [], model.get("query"));
      if (q !== model.get("query")) update({ query: q });
      else paint();
    }),
  ];
}
