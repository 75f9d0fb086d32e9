// EntropyBars' state: pure functions from the traits and the entropies of one row choice to what the bars draw
// (no DOM). Mirrors attnwidgets/widgets/entropy_bars.py.

import { fmt, headLabel, niceTicks } from "../../draw/heads";
import type { HeadPick } from "../../draw/selection";
import { type StatGridTraits, headTitle } from "../../draw/stat_grid";
import { userText } from "../../shared/text";
import type { MetaOf } from "../../shared/wire_model";

/** Python traits of EntropyBars (attnwidgets/widgets/entropy_bars.py and its base, widgets/_headstats.py). */
export interface EntropyBarsTraits extends StatGridTraits {
  rows: string; // "all" | "cls" | "last"
  measure: string; // "weights" | "norms" | "value_zeroing" (draw/measure.ts)
  _meta: EntropyMeta;
}

/** EntropyBars' `_meta` (attnwidgets/viewdata/views/entropy_bars.py): HeadWidgetMeta, the measure, and the row
 * choices ([value, label]), each one's statistic and uniform baseline (nats, null when the source has none). */
export type EntropyMeta = MetaOf<"entropy_bars">;

/** The statistic holding the entropies of row choice `rows` ("" when the source lacks it). */
export function rowStat(meta: Pick<EntropyMeta, "row_stat">, rows: string): string {
  return meta.row_stat[rows] ?? "";
}

/** What the menu calls row choice `rows`. */
export function rowLabel(meta: Pick<EntropyMeta, "rows">, rows: string): string {
  return meta.rows.find(([r]) => r === rows)?.[1] ?? rows;
}

/** The uniform baseline of row choice `rows` (nats), or null when the source has none. */
export function baseline(meta: Pick<EntropyMeta, "baselines">, rows: string): number | null {
  return meta.baselines[rows] ?? null;
}

/** The y axis: the largest value (bars and baseline), its ticks and the axis' top. */
export function entropyScale(
  data: ArrayLike<number> | null,
  base: number | null,
): { vmax: number; ticks: number[]; yTop: number } {
  let vmax = base ?? 0;
  if (data)
    for (let i = 0; i < data.length; i++) if (Number.isFinite(data[i]) && data[i] > vmax) vmax = data[i];
  const ticks = niceTicks(0, (vmax || 1) * 1.08, 5);
  return { vmax, ticks, yTop: Math.max(ticks[ticks.length - 1], (vmax || 1) * 1.02) };
}

/** The baseline's label at the right end of its line ("" without a baseline). */
export function baselineText(base: number | null): string {
  return base === null ? "" : `uniform ${base.toFixed(2)}`;
}

/**
 * The width the bars may take. Where `el` shrink-wraps the view (`wrapped`: a flex row, an ipywidgets box) its
 * width is the bars' own last width, and sizing by it made every repaint 24 px narrower: there, never go below the
 * width found before (`last`).
 */
export function availWidth(measured: number, wrapped: boolean, last: number): number {
  return wrapped ? Math.max(measured, last) : measured;
}

/** The caption under the bars: what the dashed line is, and the selected head. */
export function entropyCaption(base: number | null, sel: HeadPick): string {
  return (
    (base === null
      ? "No uniform baseline in this source. "
      : `Dashed line: entropy of uniform attention (${base.toFixed(3)} nats). `) +
    `Selected head ${headLabel(sel.layer, sel.head)}.`
  );
}

/** The tooltip of a head's bar: its entropy for the row choice, and the uniform baseline. */
export function entropyTip(
  meta: Pick<EntropyMeta, "rows" | "baselines">,
  rows: string,
  v: number,
  hit: HeadPick,
): { text: string; data: Record<string, string> } {
  const base = meta.baselines[rows];
  return {
    text:
      `head ${headTitle(hit.layer, hit.head)}\n` +
      `entropy, ${rowLabel(meta, rows)}: ${fmt(v)} nats` +
      (base === null || base === undefined ? "" : `\nuniform: ${fmt(base)} nats`),
    data: { layer: String(hit.layer), head: String(hit.head), value: String(v) },
  };
}

/** The view's title: the source and the row choice. */
export function entropyTitle(meta: Pick<EntropyMeta, "title" | "rows">, rows: string): string {
  return `${userText(meta.title)} · attention entropy, ${rowLabel(meta, rows)}`;
}
