// HeadStatsGrid's state: pure functions from the traits and one statistic's (L, H) values to what the grid draws
// (no DOM). Mirrors attnwidgets/widgets/head_stats_grid.py.

import type { HeadWidgetMeta } from "../../draw/head_stats";
import { fmt } from "../../draw/heads";
import type { HeadPick } from "../../draw/selection";
import type { StatGridTraits } from "../../draw/stat_grid";
import { headTitle, valueAt } from "../../draw/stat_grid";
import { userText } from "../../shared/text";

/** Python traits of HeadStatsGrid (attnwidgets/widgets/head_stats_grid.py and its base, widgets/_headstats.py). */
export interface HeadStatsGridTraits extends StatGridTraits {
  statistic: string;
  colormap: string; // "" = the theme's
}

/** The grey of a cell without a value. */
export const MISSING: [number, number, number] = [235, 235, 235];

/** A statistic's name as the menu, legend and title say it. */
export function statLabel(meta: Pick<HeadWidgetMeta, "labels">, stat: string): string {
  return meta.labels[stat] ?? stat;
}

/** The menu's options: every statistic, by its label. */
export function statOptions(meta: Pick<HeadWidgetMeta, "names" | "labels">): Array<[string, string]> {
  return meta.names.map((n): [string, string] => [n, statLabel(meta, n)]);
}

/** The grid's margins (CSS px): room on the left for the layer numbers (`numberWidth` px wide) and "layer", on top
 * for the head numbers and "head". */
export function gridMargins(font: number, numberWidth: number): { left: number; top: number } {
  return { left: Math.ceil(numberWidth) + font * 2 + 8, top: font * 2 + 10 };
}

/** Whether the cells are big enough to print their values ("0.000" `textWidth` px wide). */
export function valuesFit(cell: number, textWidth: number, font: number): boolean {
  return cell >= textWidth + 6 && cell >= font * 2;
}

/** Every how many heads a head number is printed, so the numbers do not overlap. */
export function labelEvery(font: number, cell: number): number {
  return Math.max(1, Math.ceil((font * 1.6) / cell));
}

/** The tooltip of a head: which head, and its value of the statistic. */
export function gridTip(
  meta: Pick<HeadWidgetMeta, "labels" | "shape">,
  stat: string,
  data: Float32Array | null,
  hit: HeadPick,
): { text: string; data: Record<string, string> } {
  const v = valueAt(data, meta.shape[1], hit.layer, hit.head);
  return {
    text: `head ${headTitle(hit.layer, hit.head)}\n${statLabel(meta, stat)}: ${fmt(v)}`,
    data: { layer: String(hit.layer), head: String(hit.head), value: String(v) },
  };
}

/** The view's title: the source and the statistic. */
export function gridTitle(meta: Pick<HeadWidgetMeta, "title" | "labels">, stat: string): string {
  return `${userText(meta.title)} · ${statLabel(meta, stat)}`;
}
