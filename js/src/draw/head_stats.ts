// What the per-head statistic widgets (HeadStatsGrid, EntropyBars, HeadClusterMap) share: the (S, L, H) buffer of
// every statistic, read one statistic at a time, and the "words" box that switches Python to word-level attention.

import { h, listen, select } from "../shared/dom";
import { type WidgetModel, onModel } from "../shared/model";
import type { MetaOf, PayloadOf } from "../shared/wire_model";
import * as span from "./span";

/** The selection traits of a widget that selects query tokens (draw/span.ts). */
export interface SpanTraits {
  selection: number[];
  combine: string;
}

/** Python traits every per-head statistic widget has (attnwidgets/widgets/_headstats.py: HeadWidget). */
export interface HeadWidgetTraits {
  layer: number;
  head: number; // -1: the whole layer
  words: boolean;
  theme: string;
  _payload: PayloadOf<"head_stats_grid">; // stats: (S, L, H) float32, S in the order of _meta.names
  _meta: HeadWidgetMeta;
  _error: string;
}

/** What HeadWidget._meta always holds (generated from attnwidgets/viewdata/views/head_stats_grid.py's
 * HeadStatsMeta); EntropyBars and HeadClusterMap send more. */
export type HeadWidgetMeta = MetaOf<"head_stats_grid">;

/** Whether the model holds its statistics yet. A view can be drawn from a state without them (a widget that
 *  published after opening its comm: notebook 06's head-roles grid showed "Cannot read properties of undefined
 *  (reading 'buffer')"); it then draws nothing and waits for the change that brings them. */
export function hasStats(model: WidgetModel<HeadWidgetTraits>): boolean {
  const payload = model.get("_payload") as Partial<HeadWidgetTraits["_payload"]> | undefined;
  const meta = model.get("_meta") as Partial<HeadWidgetMeta> | undefined;
  return Boolean(payload?.stats && Array.isArray(meta?.names) && Array.isArray(meta?.shape));
}

/** The (L, H) values of statistic `name` in `values` ((S, L, H), S in the order of `names`), or null if absent. */
export function statSlice(
  values: Float32Array,
  names: readonly string[],
  shape: readonly [number, number],
  name: string,
): Float32Array | null {
  const [nl, nh] = shape;
  const idx = names.indexOf(name);
  return idx < 0 ? null : values.subarray(idx * nl * nh, (idx + 1) * nl * nh);
}

/** A "words" checkbox bound to the synced `words` trait; its listener goes to `controls`. */
export function wordsToggle(
  model: WidgetModel<{ words: boolean }>,
  controls: Array<() => void>,
): HTMLLabelElement {
  const box = h("input", { type: "checkbox", "aria-label": "word level", "data-testid": "words" });
  box.checked = model.get("words");
  controls.push(
    listen(box, "change", () => {
      model.set("words", box.checked);
      model.save_changes();
    }),
  );
  return h("label", {}, box, "words");
}

/** A menu bound to the string trait `trait` (test id `<trait>-select`); its listener goes to `controls`. */
export function traitMenu<T>(
  model: WidgetModel<T>,
  trait: keyof T & string,
  options: Array<[string, string]>,
  label: string,
  controls: Array<() => void>,
): HTMLSelectElement {
  const menu = select(options, String(model.get(trait)), label);
  menu.dataset.testid = `${trait}-select`;
  controls.push(
    listen(menu, "change", () => {
      model.set(trait, menu.value as T[keyof T & string]);
      model.save_changes();
    }),
  );
  return menu;
}

/** What a statistic widget does on model events. */
export interface StatWidgetHooks {
  menu: string; // the trait of the widget's own menu ("statistic", "rows", "color"): rebuild the bar and repaint
  repaintOn: string[]; // traits besides layer, head and theme that only repaint
  reloadOn: string[]; // traits that carry the data: decode again
  paint(): void;
  buildControls(): void;
  load(): void;
}

/** Follow the model events every per-head statistic widget follows, then load once. The listeners, and on
 * teardown those of the controls, go to `cleanups`. */
export function followStats<T>(
  model: WidgetModel<T>,
  cleanups: Array<() => void>,
  controls: Array<() => void>,
  hooks: StatWidgetHooks,
): void {
  for (const trait of ["layer", "head", "theme", ...hooks.repaintOn])
    cleanups.push(onModel(model, `change:${trait}`, hooks.paint));
  cleanups.push(
    onModel(model, `change:${hooks.menu}`, () => {
      hooks.buildControls();
      hooks.paint();
    }),
  );
  for (const trait of hooks.reloadOn) cleanups.push(onModel(model, `change:${trait}`, hooks.load));
  cleanups.push(onModel(model, "change:words", hooks.buildControls));
  cleanups.push(() => {
    for (const c of controls) c();
  });
  hooks.load();
}

/** The query-token selection of a per-head statistic widget given one result's attention (HeadWidget's
 * `selection`/`combine`, `_meta.tokens`): the token strip, the "mean | sum" menu and clear button for the bar, and
 * Escape. `update()` follows the model; the statistics of the selected rows come back from Python in `_payload`. */
export function statSelection(
  model: WidgetModel<HeadWidgetTraits & SpanTraits>,
  root: HTMLElement,
  cleanups: Array<() => void>,
): { el: HTMLElement; controls(list: Array<() => void>): HTMLElement | null; update(): void } {
  const picker = new span.SpanSelector(model as unknown as span.SpanModel);
  const strip = span.tokenStrip(model as unknown as span.SpanModel, picker, cleanups);
  const tokens = () => (model.get("_meta") as Partial<HeadWidgetMeta> | undefined)?.tokens ?? [];
  const update = () => strip.update(tokens());
  cleanups.push(
    onModel(model, "change:selection", update),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Escape" && (model.get("selection") ?? []).length) picker.clear();
    }),
  );
  return {
    el: strip.el,
    controls: (list) =>
      tokens().length ? span.spanControls(model as unknown as span.SpanModel, picker, list) : null,
    update,
  };
}
