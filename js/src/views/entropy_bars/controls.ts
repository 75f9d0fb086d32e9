// EntropyBars' own controls: the "entropy of" rows menu (when the source has more than one row choice) and the
// measure toggle (the rest of the bar is the stat grids' shared one, draw/stat_grid.ts).

import { traitMenu } from "../../draw/head_stats";
import { measureToggle } from "../../draw/measure";
import { h } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import type { EntropyBarsTraits } from "./state";

/** The "entropy of" menu bound to the `rows` trait, when there is a choice; its listener goes to `list`. */
export function rowsMenu(model: WidgetModel<EntropyBarsTraits>, list: Array<() => void>): HTMLElement[] {
  const m = model.get("_meta");
  return m.rows.length > 1
    ? [h("label", {}, "entropy of", traitMenu(model, "rows", m.rows, "rows", list))]
    : [];
}

/** The attention / norms / value-zeroing toggle, when the source has more than one measure. */
export function measureControls(
  model: WidgetModel<EntropyBarsTraits>,
  list: Array<() => void>,
): HTMLElement[] {
  const measure = measureToggle(model, model.get("_meta"), list);
  return measure ? [measure] : [];
}
