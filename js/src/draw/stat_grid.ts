// The skeleton every per-head statistic view shares (HeadStatsGrid, HeadClusterMap, EntropyBars; all three draw from
// HeadWidget's (S, L, H) statistics, attnwidgets/widgets/_headstats.py): the shell, the query-token selection, the
// fitted box, the statistics decoded once per payload, the bar (the view's menu, "words", the view's extras, the
// selection's controls, export), the hover tooltip, a click and the arrow keys that select a head, and the model events.
// Each view gives only what differs (`StatGridSpec`): its body, its menu, its paint and what lies under the pointer.

import { decode } from "../shared/buffers";
import { resetControls } from "../shared/dom";
import type { RenderProps, WidgetModel } from "../shared/model";
import { type WidgetShell, widgetShell } from "../shared/widget_shell";
import { type FitTrait, type FitWatcher, fitWatcher } from "./fit";
import {
  type HeadWidgetTraits,
  type SpanTraits,
  followStats,
  hasStats,
  statSelection,
  statSlice,
  wordsToggle,
} from "./head_stats";
import { headLabel, repaintOnResize } from "./heads";
import { type HeadPick, arrowKeysSelect, clickToSelect } from "./selection";
import { hoverTooltip, tooltipBox } from "./tooltip";

/** The traits every statistic view has: HeadWidget's, the query-token selection's and `fit`. */
export type StatGridTraits = HeadWidgetTraits & SpanTraits & { fit: FitTrait };

/** What a view's hooks read: the model, the shell, the fitted box, the decoded statistics, the hovered thing. */
export interface StatGrid<T extends StatGridTraits, H> {
  model: WidgetModel<T>;
  el: HTMLElement;
  shell: WidgetShell;
  fit: FitWatcher;
  values: Float32Array; // (S, L, H), S in the order of _meta.names
  hover: H | null; // what the pointer is on (a head, a point), null outside
  /** The (L, H) values of statistic `name`, or null when the source lacks it. */
  slice(name: string): Float32Array | null;
}

/** What one statistic view adds to the skeleton. */
export interface StatGridSpec<T extends StatGridTraits, H> {
  className: string; // the root's class
  canvas: HTMLCanvasElement; // the picture the pointer hovers and clicks
  body: HTMLElement[]; // between the error box and the token selection (canvas or its scroll box, legend, notes)
  menu: keyof T & string; // the trait of the view's own menu: a change rebuilds the bar and repaints
  repaintOn: string[]; // traits besides layer, head and theme that only repaint
  /** The bar's first controls (the view's menu); their listeners go to `list`. */
  controls(g: StatGrid<T, H>, list: Array<() => void>): HTMLElement[];
  /** Controls after "words" (EntropyBars' measure toggle). */
  extras?(g: StatGrid<T, H>, list: Array<() => void>): HTMLElement[];
  /** Decode the view's own arrays from the payload besides the statistics (may throw on a bad buffer). */
  load?(g: StatGrid<T, H>): void;
  paint(g: StatGrid<T, H>): void;
  hitAt(g: StatGrid<T, H>, e: MouseEvent): H | null;
  same(a: H, b: H): boolean;
  tip(g: StatGrid<T, H>, hit: H): { text: string; data: Record<string, string> };
  /** The head a click at `e` selects, or null. */
  headAt(g: StatGrid<T, H>, e: MouseEvent): HeadPick | null;
}

/** Render a statistic view from its spec; returns the teardown. */
export function renderStatGrid<T extends StatGridTraits, H>(
  { model, el }: RenderProps<T>,
  spec: StatGridSpec<T, H>,
): () => void {
  const shell = widgetShell(model, el, spec.className);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const tooltip = tooltipBox();
  const anyModel = model as unknown as WidgetModel<StatGridTraits>;
  const selecting = statSelection(anyModel, root, cleanups); // query tokens: statistics of their rows
  root.append(title, bar, errorBox, ...spec.body, selecting.el, tooltip);
  const paint = () => {
    if (hasStats(anyModel)) spec.paint(g); // drawn before the statistics arrived: wait for them
  };
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const meta = () => model.get("_meta");
  const g: StatGrid<T, H> = {
    model,
    el,
    shell,
    fit,
    values: new Float32Array(0),
    hover: null,
    slice: (name) => statSlice(g.values, meta().names, meta().shape, name),
  };
  const controls: Array<() => void> = [];

  function buildControls(): void {
    if (!hasStats(anyModel)) return;
    resetControls(controls, bar);
    bar.append(...spec.controls(g, controls));
    if (meta().can_words) bar.append(wordsToggle(anyModel, controls));
    if (spec.extras) bar.append(...spec.extras(g, controls));
    const spanBar = selecting.controls(controls);
    if (spanBar) bar.append(spanBar);
    bar.append(shell.exportControls(controls));
  }

  function load(): void {
    if (!hasStats(anyModel)) return;
    try {
      spec.load?.(g);
      g.values = decode(model.get("_payload").stats).data;
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    selecting.update();
    buildControls();
    paint();
  }

  cleanups.push(
    ...hoverTooltip(spec.canvas, root, tooltip, {
      hitAt: (e) => spec.hitAt(g, e),
      same: spec.same,
      tip: (hit) => spec.tip(g, hit),
      changed: (hit) => {
        g.hover = hit;
        paint();
      },
    }),
    clickToSelect(spec.canvas, anyModel, (e) => spec.headAt(g, e), paint),
    arrowKeysSelect(root, anyModel, () => meta().shape),
  );
  followStats(model, cleanups, controls, {
    menu: spec.menu,
    repaintOn: spec.repaintOn,
    reloadOn: ["_payload", "_meta"],
    paint,
    buildControls,
    load,
  });
  cleanups.push(repaintOnResize(el, paint));
  return shell.close;
}

/** The tooltip's first line for a head: "L3.H5 (layer 3, head 5)". */
export function headTitle(layer: number, head: number): string {
  return `${headLabel(layer, head)} (layer ${layer}, head ${head})`;
}

/** The value of (layer, head) in an (L, H) slice of `nHeads` heads; NaN without a slice. */
export function valueAt(data: ArrayLike<number> | null, nHeads: number, layer: number, head: number): number {
  return data ? data[layer * nHeads + head] : Number.NaN;
}

/** The head of flat index i = layer * nHeads + head. */
export function headOf(i: number, nHeads: number): HeadPick {
  return { layer: Math.floor(i / nHeads), head: i % nHeads };
}

/** Whether (layer, head) is selected: the head itself, or any head of the layer when the selection's head is -1. */
export function isSelected(sel: HeadPick, layer: number, head: number): boolean {
  return layer === sel.layer && (sel.head === -1 || head === sel.head);
}

/** Whether the selection names a head (or a whole layer, head -1) inside a (layers, heads) shape. */
export function selectionInside(sel: HeadPick, shape: readonly [number, number]): boolean {
  return sel.layer >= 0 && sel.layer < shape[0] && sel.head < shape[1];
}
