// What the per-head statistic widgets (HeadStatsGrid, EntropyBars, HeadClusterMap) share: the (S, L, H) buffer of
// every statistic, read one statistic at a time, and the "words" box that switches Python to word-level attention.

import { h, listen } from "./dom";
import { type WidgetModel, onModel } from "./model";

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

/** Remove the listeners of the bar's controls and empty the bar, before building them again. */
export function resetControls(controls: Array<() => void>, bar: HTMLElement): void {
  for (const c of controls.splice(0)) c();
  bar.replaceChildren();
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
