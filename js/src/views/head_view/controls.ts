// HeadView's controls: the toolbar (kind, layer, sentence filter, window pager, words), the head swatches (GQA
// groups outlined), and the canvas's hover, click (select a span of queries) and keys.

import { categorical } from "../../draw/colors";
import { kvGroups } from "../../draw/heads";
import { nextSpan } from "../../draw/span";
import { h, listen, menu, resetControls, typedInControl } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import {
  FILTERS,
  type Geo,
  type HeadViewTraits,
  type Hit,
  keyChange,
  queryCount,
  soloHead,
  stepWindow,
  swatchStyle,
  toggleHead,
} from "./state";

type Save = (changes: Partial<HeadViewTraits>) => void;

/** The ◀ tokens m–n of N ▶ pager of a window. */
function windowNav(model: WidgetModel<HeadViewTraits>, controls: Array<() => void>, save: Save): HTMLElement {
  const nq = queryCount(model.get("_meta"), model.get("kind"));
  const w = model.get("window");
  const prev = h("button", {
    type: "button",
    "data-testid": "window-prev",
    title: "previous window (Page Up)",
    text: "◀",
    disabled: w[0] <= 0,
  });
  const next = h("button", {
    type: "button",
    "data-testid": "window-next",
    title: "next window (Page Down)",
    text: "▶",
    disabled: w[1] >= nq,
  });
  const label = h("span", { "data-testid": "window-label", text: `tokens ${w[0]}–${w[1] - 1} of ${nq}` });
  controls.push(
    listen(prev, "click", () => save({ window: stepWindow(model.get("window"), nq, -1) })),
    listen(next, "click", () => save({ window: stepWindow(model.get("window"), nq, 1) })),
  );
  return h("span", { className: "aw-window-nav" }, prev, label, next);
}

/** (Re)build the toolbar. */
export function buildControls(
  model: WidgetModel<HeadViewTraits>,
  bar: HTMLElement,
  controls: Array<() => void>,
  save: Save,
  windowed: boolean,
  exportControls: (list: Array<() => void>) => HTMLElement,
): void {
  resetControls(controls, bar);
  const m = model.get("_meta");
  const kind = model.get("kind");
  const [nLayers] = m.shapes[kind] ?? [0, 0];
  if (m.kinds.length > 1) {
    const opts = m.kinds.map((k): [string, string] => [k, k]);
    const kindSel = menu(controls, opts, kind, "attention kind", "kind-select", (v) => save({ kind: v }));
    bar.append(h("label", {}, "attention", kindSel));
  }
  const layers = Array.from({ length: nLayers }, (_, i): [string, string] => [String(i), String(i)]);
  const layerSel = menu(controls, layers, String(model.get("layer")), "layer", "layer-select", (v) =>
    save({ layer: Number(v) }),
  );
  bar.append(h("label", {}, "layer", layerSel));
  const [qs, ks] = m.segments[kind] ?? [[], []];
  if (qs.includes(1) || ks.includes(1)) {
    const f = menu(controls, FILTERS, model.get("sentence_filter"), "sentence filter", "filter-select", (v) =>
      save({ sentence_filter: v }),
    );
    bar.append(h("label", {}, "sentences", f));
  }
  if (windowed) bar.append(windowNav(model, controls, save));
  if (m.can_words) {
    const box = h("input", { type: "checkbox", "aria-label": "word level", "data-testid": "words-toggle" });
    box.checked = model.get("words");
    controls.push(listen(box, "change", () => save({ words: box.checked })));
    bar.append(h("label", {}, box, "words"));
  }
  bar.append(exportControls(controls));
}

/**
 * The head swatches: built when the number of heads changes and restyled in place when the shown heads change, so
 * both clicks of a double-click land on the same button.
 */
export class Swatches {
  private buttons: HTMLButtonElement[] = [];

  constructor(
    private readonly box: HTMLElement,
    private readonly model: WidgetModel<HeadViewTraits>,
    private readonly listeners: Array<() => void>,
    private readonly save: Save,
  ) {}

  /** Build the swatches if the heads or their groups changed, then style each by whether it is shown. */
  update(): void {
    const meta = this.model.get("_meta");
    const kind = this.model.get("kind");
    const [, nHeads] = meta.shapes[kind] ?? [0, 0];
    // Cross-attention reads the encoder's keys: no grouping there.
    const groups = kind === "cross" ? null : kvGroups(nHeads, meta.n_kv_heads ?? 0);
    const shape = `${nHeads}/${groups?.length ?? 0}`;
    if (this.box.dataset.shape !== shape) {
      this.box.dataset.shape = shape;
      this.build(nHeads, groups);
    }
    const on = new Set(this.model.get("heads"));
    this.buttons.forEach((s, i) => {
      s.setAttribute("aria-pressed", on.has(i) ? "true" : "false");
      s.style.cssText = swatchStyle(categorical(i), on.has(i));
    });
  }

  /** One box per key/value head group (GQA), or the bar itself. */
  private groupBoxes(groups: number[][] | null): HTMLElement[] {
    if (!groups) return [this.box];
    return groups.map((heads, g) => {
      const box = h(
        "span",
        {
          className: "aw-kv-group",
          "data-testid": "kv-group",
          "data-kv": g,
          title: `KV head ${g}: query heads ${heads[0]}–${heads[heads.length - 1]} share its keys and values`,
        },
        h("span", { className: "aw-kv-caption", text: `KV head ${g}` }),
      );
      this.box.append(box);
      return box;
    });
  }

  private build(nHeads: number, groups: number[][] | null): void {
    resetControls(this.listeners);
    this.box.replaceChildren(h("span", { className: "aw-muted", text: "heads" }));
    this.buttons = [];
    const boxes = this.groupBoxes(groups);
    const size = groups ? groups[0].length : nHeads;
    for (let i = 0; i < nHeads; i++) {
      const kv = groups ? ` · KV head ${Math.floor(i / size)}` : "";
      const s = h("button", {
        type: "button",
        "data-testid": "head-swatch",
        "data-head": i,
        title: `head ${i}${kv}: click to toggle, double-click to show it alone`,
        text: String(i),
      });
      this.listeners.push(
        listen(s, "click", () => this.save({ heads: toggleHead(this.model.get("heads"), i) })),
        listen(s, "dblclick", () => this.save({ heads: soloHead(this.model.get("heads"), i, nHeads) })),
      );
      boxes[groups ? Math.floor(i / size) : 0].append(s);
      this.buttons.push(s);
    }
  }
}

/** What the canvas listeners read and change in the view. */
export interface CanvasHooks {
  tokenAt: (e: MouseEvent) => Hit | null;
  hover: () => Hit | null;
  setHover: (hit: Hit | null) => void;
  firstRow: () => number; // the token position of the first row (a window's start)
  windowed: () => boolean;
}

/** Hover and click on the canvas (click a query: select it, shift: a span, ctrl/cmd: add or remove), keys on root. */
export function canvasListeners(
  model: WidgetModel<HeadViewTraits>,
  canvas: HTMLCanvasElement,
  root: HTMLElement,
  hooks: CanvasHooks,
  save: Save,
): Array<() => void> {
  let anchor: number | null = null; // where a shift-click's span starts (draw/span.ts nextSpan)
  return [
    listen(canvas, "mousemove", (e: MouseEvent) => {
      const at = hooks.tokenAt(e);
      const hover = hooks.hover();
      if (at?.side === hover?.side && at?.i === hover?.i) return;
      canvas.style.cursor = at?.side === "q" ? "pointer" : "default";
      hooks.setHover(at);
    }),
    listen(canvas, "mouseleave", () => hooks.setHover(null)),
    listen(canvas, "click", (e: MouseEvent) => {
      const at = hooks.tokenAt(e);
      if (at?.side !== "q") return;
      const pick = nextSpan(model.get("selected"), hooks.firstRow() + at.i, e, anchor);
      anchor = pick.anchor;
      save({ selected: pick.selection });
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return;
      const traits = {
        layer: model.get("layer"),
        heads: model.get("heads"),
        window: model.get("window"),
        kind: model.get("kind"),
      };
      const change = keyChange(traits, model.get("_meta"), hooks.windowed(), e.key);
      if (!change) return;
      save(change);
      e.preventDefault();
    }),
  ];
}

/** Scroll query row `row` into view (none: nothing), retrying while the canvas is not laid out yet. */
export function revealRow(
  scroll: HTMLElement,
  geo: Pick<Geo, "top" | "rowH">,
  row: number | undefined,
  tries = 20,
): void {
  if (!scroll.isConnected || scroll.clientHeight === 0) {
    // Not laid out yet (the first paint happens before the page shows the widget): try again shortly.
    if (tries > 0) setTimeout(() => revealRow(scroll, geo, row, tries - 1), 100);
    return;
  }
  if (row === undefined) return;
  const y = geo.top + (row + 0.5) * geo.rowH;
  if (y < scroll.scrollTop + geo.rowH || y > scroll.scrollTop + scroll.clientHeight * 0.6)
    scroll.scrollTop = Math.max(0, y - scroll.clientHeight / 2);
}
