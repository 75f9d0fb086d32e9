// Captions and the reduction menu shared by the heatmap and the model view for long inputs and grouped-query
// attention.

import { menu } from "../shared/dom";

/** What the caption says about a long input's overview: how blocks merge and how many rows were read. */
export function overviewNote(factor: number, reduce: string, rowsUsed: number): string {
  if (factor <= 1) return "";
  const how = reduce === "mean" ? "mean" : "max";
  const rows = rowsUsed > 0 && rowsUsed < factor ? `, ${rowsUsed} of every ${factor} query rows read` : "";
  return ` · overview (${how} of ${factor}×${factor} blocks${rows}; zoom for detail)`;
}

/** "KV head g" for a query head under grouped-query attention (groupSize query heads per key/value head). */
export function kvHeadNote(head: number, groupSize: number): string {
  return groupSize > 1 && head >= 0 ? ` · KV head ${Math.floor(head / groupSize)}` : "";
}

/** The "block max | block mean" menu (test id `reduce-select`): how a long input's overview (or the model view's
 * thumbnails) merges a block of cells; `pick` gets the choice. */
export function reduceMenu(
  controls: Array<() => void>,
  value: string,
  label: string,
  pick: (value: string) => void,
): HTMLSelectElement {
  const options: Array<[string, string]> = [
    ["max", "block max"],
    ["mean", "block mean"],
  ];
  return menu(controls, options, value || "max", label, "reduce-select", pick);
}
