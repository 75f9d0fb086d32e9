// GenerationView's state: pure functions from the traits, the steps x keys matrix and the span-share lines to what
// the page draws (no DOM). Mirrors attnwidgets/widgets/generation.py; the span share is computed in Python
// (`_share`, viewdata/selection.py selection_share).

import { headLabel } from "../../draw/heads";
import { spanTokens } from "../../draw/span";
import type { GenerationShare } from "../../generated/wire";
import type { Matrix, Packed } from "../../shared/buffers";
import { tokenLabel, userText } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of GenerationView. */
export interface GenerationTraits {
  step: number;
  layer: number;
  head: number;
  kind: string;
  colormap: string;
  theme: string;
  fit: "auto" | boolean | number[]; // draw/fit.ts
  selection: number[]; // selected tokens: positions of the fed tokens (a decoder) or the source, [] none
  combine: string; // "sum" (share of each step's attention on the selection) | "mean" (per selected token)
  share_by: string; // "layer" | "head" | "role": the panel's lines
  sampling: boolean; // the sampling playground under the top-k list
  lens: boolean; // the logit lens panel (a generation with `lens_k`): the step's top tokens per layer
  temperature: number;
  top_k: number; // 0: all k candidates
  top_p: number;
  min_p: number;
  _share: ShareAnswer;
  _error: string;
  _meta: GenerationMeta;
  _payload: PayloadOf<"generation">;
}

export type GenerationMeta = MetaOf<"generation">;

/** Python's answer for the span-share panel: the steps x lines matrix and each line's name, or why not. */
export type ShareAnswer = GenerationShare | Record<string, never>;

/** What picks the matrix on screen. */
export type GenerationPick = Pick<GenerationTraits, "kind" | "layer" | "head">;

/** Width kept beside the map for the top-k list (its min-width, the gap and a bar). */
export const TOPK_ROOM = 300;

/** Width kept beside the map while the logit-lens table is shown under the top-k list (its rows' labels and k
 * cells). */
export const LENS_ROOM = 400;

/** The matrix's name: "kind/layer/head" (the same as the payload's and a request's key). */
export function viewKey(v: GenerationPick): string {
  return `${v.kind}/${v.layer}/${v.head}`;
}

/** What a "matrix" request asks Python for. */
export function matrixRequest(v: GenerationPick): {
  what: string;
  kind: string;
  layer: number;
  head: number;
} {
  return { what: "matrix", kind: v.kind, layer: v.layer, head: v.head };
}

/** Where key `k` of `kind` sits in the text lines: [line, index] (line 0 the prompt/source, 1 the output). */
export function keySpan(kind: string, encDec: boolean, nPrompt: number, k: number): [number, number] {
  if (encDec) return kind === "cross" ? [0, k] : [1, k];
  return k < nPrompt ? [0, k] : [1, k - nPrompt];
}

/** The step after a key press (null: not a step key). */
export function stepKey(key: string, step: number, n: number): number | null {
  if (key === "ArrowRight" || key === "ArrowDown") return Math.min(n - 1, step + 1);
  if (key === "ArrowLeft" || key === "ArrowUp") return Math.max(0, step - 1);
  if (key === "Home") return 0;
  if (key === "End") return n - 1;
  return null;
}

/** `step` clamped to the steps 0..n-1. */
export function clampStep(step: number, n: number): number {
  return Math.max(0, Math.min(n - 1, step));
}

/** The largest finite value (0 when none): the top of the map's and the text's one colour scale. */
export function finiteMax(data: ArrayLike<number>): number {
  let top = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (Number.isFinite(v) && v > top) top = v;
  }
  return top;
}

/** Row `step` of a steps x keys matrix (NaN: keys not written yet). */
export function stepRow(matrix: Matrix, step: number): Float32Array {
  const cols = matrix.shape[1];
  return matrix.data.subarray(step * cols, (step + 1) * cols);
}

/** One token of the text: its line (0 prompt/source, 1 output), index on it, text and selectable position. */
export interface TextToken {
  line: number;
  index: number;
  text: string;
  pos: number | null; // the position a click selects (null: not selectable)
}

/** The text's lines: a decoder's prompt and output on one line (label ""), an encoder-decoder's source and output
 * on two. A decoder's generated token is selectable unless it is the last (never fed back); the source always. */
export function textLines(m: GenerationMeta): Array<{ label: string; tokens: TextToken[] }> {
  if (!m.encoder_decoder) {
    const nP = m.prompt.length;
    const tokens: TextToken[] = [
      ...m.prompt.map((text, i) => ({ line: 0, index: i, text, pos: i })),
      ...m.generated.map((text, i) => ({
        line: 1,
        index: i,
        text,
        pos: nP + i < m.n_selectable ? nP + i : null,
      })),
    ];
    return [{ label: "", tokens }];
  }
  const output = [m.keys.decoder?.[0] ?? "", ...m.generated];
  return [
    { label: "source", tokens: m.prompt.map((text, i) => ({ line: 0, index: i, text, pos: i })) },
    { label: "output", tokens: output.map((text, i) => ({ line: 1, index: i, text, pos: null })) },
  ];
}

/** The index on the output line of the token step `step` wrote (an encoder-decoder's line starts with the start
 * token). */
export function currentIndex(encDec: boolean, step: number): number {
  return encDec ? step + 1 : step;
}

/** The fed tokens a selection indexes (their display text), for its caption. */
export function selectable(m: GenerationMeta): string[] {
  const all = m.encoder_decoder ? m.prompt : [...m.prompt, ...m.generated];
  return all.slice(0, m.n_selectable);
}

/** "3 tokens: a b c (1–3)": how many tokens are selected, the first few, their positions when they are one span. */
export function selectionText(tokens: string[], selection: number[]): string {
  return `${selection.length} ${selection.length === 1 ? "token" : "tokens"}: ${spanTokens(tokens, selection)}`;
}

/** Whether the span-share panel is shown (something selected, or a line per role of a chat prompt; and Python's
 * answer for it). */
export function sharing(
  selection: number[] | null | undefined,
  share: ShareAnswer | null | undefined,
  shareBy = "layer",
): boolean {
  return Boolean(((selection ?? []).length || shareBy === "role") && share?.key);
}

/** What the share panel's caption says it is of: the roles ("each role: system 0–9 · user 10–15 · …") or the
 * selection. */
export function shareSubject(
  roles: Array<[string, number, number]>,
  shareBy: string,
  selectionText: string,
): string {
  if (shareBy !== "role") return selectionText;
  const spans = roles.map(([role, a, b]) => `${role} ${a}–${b - 1}`);
  return `each role (${spans.length > 6 ? `${spans.slice(0, 6).join(" · ")} …` : spans.join(" · ")})`;
}

/** The panel's plot height: its own, or when fitted to a box of `roomH` a part of it (the map keeps the rest). */
export function shareHeight(themeName: string, roomH: number | null): number {
  const own = themeName === "lecture" ? 190 : 150;
  return roomH === null ? own : Math.max(100, Math.min(own, Math.round(roomH * 0.38)));
}

/** The top of the share panel's y axis: 1 for a share (sum), else the largest finite value (1 when none). */
export function shareTop(data: ArrayLike<number>, sum: boolean): number {
  return sum ? 1 : finiteMax(data) || 1;
}

/** The share panel's caption. */
export function shareCaption(what: string, sum: boolean, shareBy: string, layer: number): string {
  return (
    `${sum ? "share of each step's attention on" : "mean weight per token of"} ${what}` +
    ` · ${shareBy === "head" ? `heads of layer ${layer}` : shareBy === "role" ? `layer ${layer}, mean of its heads` : "each layer, mean of its heads"}` +
    " · click a step to go there"
  );
}

/** The step a click at `x` (px from the panel's left) on the share panel goes to; null outside the plot. */
export function shareStepAt(l: { x0: number; w: number; steps: number }, x: number): number | null {
  if (l.steps < 1) return null;
  const f = (x - l.x0) / Math.max(1, l.w);
  if (f < -0.02 || f > 1.02) return null;
  return Math.round(Math.max(0, Math.min(1, f)) * (l.steps - 1));
}

/** The map's row (step) at `y` px from its top (rows `cellH` px tall); null outside the rows. */
export function rowAtY(l: { y0: number; cellH: number; rows: number }, y: number): number | null {
  const q = Math.floor((y - l.y0) / l.cellH);
  return q >= 0 && q < l.rows ? q : null;
}

/** Sizes the steps x keys map is drawn at: `cell` px a key (column), `cellH` px a step (row; taller than `cell` when
 * few steps would make a map too short to read: {@link MIN_MAP}). */
export interface MapGeometry {
  cell: number;
  cellH: number;
  showLabels: boolean;
  x0: number;
  y0: number;
  width: number;
  height: number;
}

/** The least height (CSS px, labels included) a fitted map keeps beside the span-share panel. */
export const MIN_FIT_MAP = 340;

/** The least height (CSS px, labels included) of the map where its box allows: a room reads no map under 200 px
 * (tests/browser/layout_check.py MIN_MAP_PX), so a generation of a few steps gets taller rows, not a strip (six steps
 * of a chat prompt made one 58 px tall at 1280 x 720). */
export const MIN_MAP = 240;

/** The map's cells and margins: `roomW` the width its row has, `fitted` a box to fit in (its height less what the
 * share panel takes, `panelH`). Labels when a cell is 10 px or more, or always with `thin` (the lecture theme: labels
 * at their least size, every k-th of them on small cells, draw/canvas.ts labelPlan). Rows are as tall as the columns
 * are wide, or taller, up to the box, so that the map is {@link MIN_MAP} tall. */
export function mapGeometry(o: {
  rows: number;
  cols: number;
  font: number;
  maxCell: number;
  maxGrid: number;
  roomW: number;
  fitted: { width: number; height: number } | null;
  panelH: number;
  side?: number; // width kept beside the map (default TOPK_ROOM)
  thin?: boolean; // labels on cells under 10 px too, thinned (the lecture theme)
}): MapGeometry {
  const labelFont = Math.max(10, o.font - 2);
  const margins = { x0: Math.min(140, labelFont * 7), y0: Math.min(120, labelFont * 6) };
  const maxW = Math.min(o.maxGrid, o.roomW - (o.side ?? TOPK_ROOM) + 40);
  let cell = Math.max(3, Math.min(o.maxCell, Math.floor(Math.max(120, maxW) / Math.max(o.cols, o.rows, 1))));
  let byH = Number.POSITIVE_INFINITY;
  if (o.fitted) {
    // The span-share panel shares the screen's height with the map, but never shrinks the map under MIN_FIT_MAP
    // (it took the map to ~110 px in a 720 px window): the panel goes below the fold instead.
    const mapH = Math.max(o.fitted.height - o.panelH, Math.min(o.fitted.height, MIN_FIT_MAP));
    const byW = Math.floor((o.fitted.width - (o.side ?? TOPK_ROOM) - margins.x0 - 8) / Math.max(o.cols, 1));
    byH = Math.floor((mapH - margins.y0 - 8) / Math.max(o.rows, 1));
    cell = Math.max(3, Math.min(cell, byW, byH));
  }
  const showLabels = cell >= 10 || Boolean(o.thin);
  const x0 = showLabels ? margins.x0 : 8;
  const y0 = showLabels ? margins.y0 : 8;
  const tall = Math.ceil((MIN_MAP - y0 - 8) / Math.max(o.rows, 1));
  const cellH = Math.max(cell, Math.min(tall, byH));
  return { cell, cellH, showLabels, x0, y0, width: x0 + o.cols * cell + 8, height: y0 + o.rows * cellH + 8 };
}

/** The title: the result's and which generated token is on screen. */
export function titleText(m: GenerationMeta, step: number): string {
  return `${userText(m.title)} · generated token ${step + 1} of ${m.generated.length}`;
}

/** The caption under the map: the step's query, the attention and the head. */
export function captionText(m: GenerationMeta, v: GenerationPick & { step: number }): string {
  const what = v.kind === "cross" ? "cross-attention over the source" : "self-attention";
  return (
    `step=${v.step}: the query that wrote ${userText(tokenLabel(m.generated[v.step] ?? ""))}, ` +
    `${what}, head ${headLabel(v.layer, v.head)}` +
    `${v.head < 0 ? " (mean over heads)" : ""}. Grey: tokens not written yet.`
  );
}

/** One row of the top-k list: the token, its probability, whether the step chose it. */
export function topkRows(
  probs: Matrix,
  topkTokens: string[][],
  chosen: string,
  step: number,
): Array<{ token: string; p: number; chosen: boolean }> {
  const k = probs.shape[1];
  return Array.from({ length: k }, (_, j) => {
    const token = topkTokens[step]?.[j] ?? "";
    return { token, p: probs.data[step * k + j], chosen: token === chosen };
  });
}
