// HeadClusterMap's own control: the "colour by" menu, layer or a statistic (the rest of the bar is the stat grids'
// shared one, draw/stat_grid.ts).

import { traitMenu } from "../../draw/head_stats";
import { h } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import { type HeadClusterMapTraits, colorOptions } from "./state";

/** The "colour by" menu bound to the `color` trait; its listener goes to `list`. */
export function colorMenu(model: WidgetModel<HeadClusterMapTraits>, list: Array<() => void>): HTMLElement {
  return h(
    "label",
    {},
    "colour by",
    traitMenu(model, "color", colorOptions(model.get("_meta")), "colour by", list),
  );
}
