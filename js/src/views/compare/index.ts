// AttentionCompare: two results' attention for one head, side by side (A | B, unaligned tokens greyed) or as the
// signed difference B − A over the aligned tokens on a diverging scale centred on 0, beside a layers x heads grid of
// a per-head summary (Jensen–Shannon divergence or cosine). A click in the grid opens that head.
// Mirrors attnwidgets/widgets/compare.py. Only the shown head's maps cross from Python; choosing another head sets
// the synced `layer`/`head` and the kernel answers with a new `_payload`.
// Query tokens of A are selected with the heatmap's clicks (draw/span.ts), synced as `selection`/`combine`; the
// selected rows are outlined (in B where aligned) and each map gets the combined row of its selected rows under it
// (Python computes them: AttentionCompare.span_weights, in `_payload`).
// This file wires the parts up: state.ts (what to draw), paint.ts (the canvases), controls.ts (menus, hover, clicks).

import type { ColorMapName } from "../../draw/colors";
import type { DivergingName } from "../../draw/diverging";
import { type FitWatcher, fitWatcher } from "../../draw/fit";
import { type GridLayout, roomFor } from "../../draw/heads";
import * as span from "../../draw/span";
import { tooltipBox } from "../../draw/tooltip";
import { decode } from "../../shared/buffers";
import { h } from "../../shared/dom";
import { type RenderProps, type WidgetModel, onModel } from "../../shared/model";
import { type Theme, applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import { buildControls, listeners, syncMenus } from "./controls";
import { type Legend, paintGrid, paintMaps } from "./paint";
import { type CompareTraits, type Panel, captionText, spanKey, summarySlice, titleText } from "./state";

export type { CompareTraits } from "./state";

type Model = WidgetModel<CompareTraits>;

/** A legend's parts: a colour bar between its two ends, a label under it. */
function legendParts(): Legend {
  const muted = () => h("span", { className: "aw-muted", "data-export-text": "" });
  return {
    canvas: h("canvas"),
    lo: muted(),
    hi: muted(),
    label: h("div", { className: "aw-muted", "data-export-text": "" }),
  };
}

/** A column: the canvas (in a scroll box for the maps), its legend, its label. */
function column(canvas: Node, l: Legend): HTMLDivElement {
  return h(
    "div",
    { className: "aw-compare-col" },
    canvas,
    h("div", { className: "aw-legend" }, l.lo, l.canvas, l.hi),
    l.label,
  );
}

/** The page's parts: the maps' column beside the grid's, the caption, the tooltip. */
function layoutParts() {
  const maps = h("canvas", { className: "aw-canvas", "data-testid": "compare-maps" });
  const grid = h("canvas", { className: "aw-canvas", "data-testid": "compare-grid" });
  const mapLegend = legendParts();
  const gridLegend = legendParts();
  const left = column(h("div", { className: "aw-scroll" }, maps), mapLegend);
  const right = column(grid, gridLegend);
  const row = h("div", { className: "aw-compare-row" }, left, right);
  const caption = h("div", { className: "aw-muted aw-compare-caption", "data-export-text": "" });
  return { maps, grid, mapLegend, gridLegend, left, right, row, caption, tooltip: tooltipBox() };
}

/** What the view holds: the payload's matrices decoded, and where the last paint put the panels and the grid. */
interface Held {
  mats: { a: Float32Array; b: Float32Array; diff: Float32Array };
  summaries: Float32Array;
  spanRows: { a: Float32Array; b: Float32Array; diff: Float32Array } | null;
  panels: Panel[];
  grid: GridLayout | null;
}

/** Decode the payload's matrices (and its span rows when it has them) into `held`. */
function decodePayload(model: Model, held: Held): void {
  const p = model.get("_payload");
  held.mats = { a: decode(p.a).data, b: decode(p.b).data, diff: decode(p.diff).data };
  held.summaries = decode(p.summary).data;
  held.spanRows =
    p.span_a && p.span_b && p.span_diff
      ? { a: decode(p.span_a).data, b: decode(p.span_b).data, diff: decode(p.span_diff).data }
      : null;
}

/** The grid, then the maps beside it (they take the room the grid leaves). */
function paintBoth(
  model: Model,
  el: HTMLElement,
  fit: FitWatcher,
  parts: ReturnType<typeof layoutParts>,
  held: Held,
) {
  const t: Theme = theme(model.get("theme"));
  const m = model.get("_meta");
  const p = model.get("_payload");
  const fitted = fit.room(parts.row);
  const map = (model.get("colormap") || t.colormap) as ColorMapName;
  const { data, name } = summarySlice(held.summaries, m, model.get("summary"));
  held.grid = paintGrid(parts.grid, parts.gridLegend, {
    t,
    m,
    data,
    name,
    map,
    layer: model.get("layer"),
    head: model.get("head"),
    room: roomFor(el),
    fitted,
    show: model.get("show"),
    div: (model.get("diverging") || (t.name === "lecture" ? "puor" : "rdbu")) as DivergingName,
  });
  parts.right.style.width = `${Math.max(held.grid.width, 200)}px`;
  const selection = model.get("selection") ?? [];
  const wanted = spanKey({ ...pick(model), selection, combine: model.get("combine") });
  // fitted: what the maps' legend and label take below its canvas
  const below = fitted
    ? parts.left.getBoundingClientRect().height - parts.maps.getBoundingClientRect().height
    : 0;
  const gridW = held.grid.width;
  const drawn = paintMaps(parts.maps, parts.mapLegend, {
    t,
    m,
    p,
    show: model.get("show"),
    map,
    div: (model.get("diverging") || (t.name === "lecture" ? "puor" : "rdbu")) as DivergingName,
    mats: held.mats,
    spanRows: selection.length && p.span_key === wanted ? held.spanRows : null,
    selection,
    combine: model.get("combine"),
    avail: Math.max(240, Math.min(roomFor(el), 1600) - Math.max(gridW, 200) - 44),
    fitted,
    gridW,
    below: Math.max(0, below),
  });
  held.panels = drawn.panels;
  parts.left.style.width = `${Math.max(drawn.width, 200)}px`;
}

const pick = (model: Model) => ({ layer: model.get("layer"), head: model.get("head") });

function render({ model, el }: RenderProps<CompareTraits>): () => void {
  const shell = widgetShell(model, el, "aw-compare", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const parts = layoutParts();
  root.append(title, bar, errorBox, parts.row, parts.caption, parts.tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const empty = new Float32Array(0);
  const held: Held = {
    mats: { a: empty, b: empty, diff: empty },
    summaries: empty,
    spanRows: null,
    panels: [],
    grid: null,
  };
  const controls: Array<() => void> = [];
  const picker = new span.SpanSelector(model);

  function paint(): void {
    applyTheme(root, theme(model.get("theme")));
    const m = model.get("_meta");
    paintBoth(model, el, fit, parts, held);
    syncMenus(model, bar);
    title.textContent = titleText(m, model.get("layer"), model.get("head"));
    parts.caption.textContent = captionText(m);
    showError(model.get("_error"));
  }

  function load(): void {
    try {
      decodePayload(model, held);
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    paint();
  }

  cleanups.push(
    ...listeners(
      model,
      {
        root,
        maps: parts.maps,
        grid: parts.grid,
        tooltip: parts.tooltip,
        panels: () => held.panels,
        gridLayout: () => held.grid,
        matrix: (which) => held.mats[which],
        summaries: () => held.summaries,
        paint,
      },
      picker,
    ),
  );
  for (const trait of [
    "layer",
    "head",
    "show",
    "summary",
    "theme",
    "colormap",
    "diverging",
    "selection",
    "combine",
  ])
    cleanups.push(onModel(model, `change:${trait}`, paint));
  cleanups.push(onModel(model, "change:_payload", load));
  cleanups.push(
    onModel(model, "change:_meta", () => {
      buildControls(model, bar, controls, picker, shell.exportControls);
      load();
    }),
  );
  cleanups.push(() => {
    for (const c of controls) c();
  });
  buildControls(model, bar, controls, picker, shell.exportControls);
  load();
  return shell.close;
}

const CSS = `
.aw-compare-row { display: flex; gap: 20px; align-items: flex-start; flex-wrap: wrap; }
.aw-compare-col { display: flex; flex-direction: column; max-width: 100%; }
.aw-compare-col .aw-legend { flex-wrap: wrap; }
.aw-compare-caption { margin-top: 4px; max-width: 100%; }
`;

export default { render };
