// HeadClusterMap's state: pure functions from the traits, the points and the statistics to what the map draws
// (no DOM). Mirrors attnwidgets/widgets/head_cluster_map.py.

import type { HeadWidgetMeta } from "../../draw/head_stats";
import { fmt } from "../../draw/heads";
import type { HeadPick } from "../../draw/selection";
import { type StatGridTraits, headOf, headTitle, isSelected } from "../../draw/stat_grid";
import { userText } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of HeadClusterMap (attnwidgets/widgets/head_cluster_map.py and its base, widgets/_headstats.py). */
export interface HeadClusterMapTraits extends StatGridTraits {
  color: string; // "layer" or a statistic name
  colormap: string;
  // stats: (S, L, H) float32 as every HeadWidget; points: (K, 2) float32 MDS coordinates, k = layer * H + head
  _payload: PayloadOf<"head_cluster_map">;
  _meta: ClusterMeta;
}

/** HeadClusterMap's `_meta` (attnwidgets/viewdata/views/head_cluster_map.py): HeadWidgetMeta and the colour menu
 * ("layer" then the statistics). */
export type ClusterMeta = MetaOf<"head_cluster_map">;

/** What the colour menu and the title call a colouring: "layer", or the statistic's label. */
export function colorLabel(meta: Pick<HeadWidgetMeta, "labels">, color: string): string {
  return color === "layer" ? "layer" : (meta.labels[color] ?? color);
}

/** The colour menu's options. */
export function colorOptions(meta: Pick<ClusterMeta, "colors" | "labels">): Array<[string, string]> {
  return meta.colors.map(([v]): [string, string] => [v, colorLabel(meta, v)]);
}

/** The points' radius (CSS px) for a theme's font size. */
export function pointRadius(font: number): number {
  return font >= 18 ? 9 : 6;
}

/** The order the `k` points are drawn in: the unselected first (in index order), the selection on top. */
export function paintOrder(k: number, nHeads: number, sel: HeadPick): number[] {
  const on = (i: number) => {
    const { layer, head } = headOf(i, nHeads);
    return isSelected(sel, layer, head);
  };
  return Array.from({ length: k }, (_, i) => i).sort((a, b) => Number(on(a)) - Number(on(b)));
}

/** The statistics a point's tooltip lists: the colouring's first (unless "layer"), then entropy, sep and cls. */
export function tipStats(color: string): string[] {
  const shown = color === "layer" ? [] : [color];
  for (const name of ["entropy", "sep", "cls"]) if (!shown.includes(name)) shown.push(name);
  return shown;
}

/** The tooltip of point i: its head, then each listed statistic the source has. */
export function clusterTip(
  meta: Pick<HeadWidgetMeta, "labels" | "shape">,
  color: string,
  slice: (name: string) => ArrayLike<number> | null,
  i: number,
): { text: string; data: Record<string, string> } {
  const { layer, head } = headOf(i, meta.shape[1]);
  const lines = [headTitle(layer, head)];
  for (const name of tipStats(color)) {
    const data = slice(name);
    if (data) lines.push(`${meta.labels[name] ?? name}: ${fmt(data[i])}`);
  }
  const v = color === "layer" ? layer : (slice(color)?.[i] ?? Number.NaN);
  return { text: lines.join("\n"), data: { layer: String(layer), head: String(head), value: String(v) } };
}

/** The view's title: the source and the colouring. */
export function clusterTitle(meta: Pick<HeadWidgetMeta, "title" | "labels">, color: string): string {
  return `${userText(meta.title)} · head map, coloured by ${colorLabel(meta, color)}`;
}
