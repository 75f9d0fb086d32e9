// HeadStatsGrid's own control: the "colour by" statistic menu (the rest of the bar is the stat grids' shared one,
// draw/stat_grid.ts).

import { traitMenu } from "../../draw/head_stats";
import { h } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import { type HeadStatsGridTraits, statOptions } from "./state";

/** The "colour by" menu bound to the `statistic` trait; its listener goes to `list`. */
export function statisticMenu(model: WidgetModel<HeadStatsGridTraits>, list: Array<() => void>): HTMLElement {
  const menu = traitMenu(model, "statistic", statOptions(model.get("_meta")), "statistic", list);
  return h("label", {}, "colour by", menu);
}
