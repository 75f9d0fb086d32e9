// AttentionProfile's state: pure functions from the traits, the document and a profile (per key weights) to what
// the text and the strip show (no DOM). Mirrors attnwidgets/widgets/profile.py; the same sums as
// attnwidgets/viewdata/profile.py (unit_sums, unit_of), so the page colours what Python computes.

import { selectionKey, spanCaption } from "../../draw/span";
import type { Packed } from "../../shared/buffers";
import { userText, visibleText } from "../../shared/text";
import type { PayloadOf } from "../../shared/wire_model";

export type Unit = "token" | "sentence" | "paragraph";

/** One kind's document: key tokens as they read, query tokens, first token of each sentence and paragraph. */
export interface Doc {
  pieces: string[];
  queries: string[];
  sentence: number[];
  paragraph: number[];
}

/** Python traits of AttentionProfile (attnwidgets/widgets/profile.py). */
export interface ProfileTraits {
  layer: number;
  head: number; // -1: mean over the layer's heads
  kind: string;
  query: [number, number]; // [start, stop) of the query span
  unit: Unit;
  selected: number[]; // [] or [k0, k1)
  selection: number[]; // the query tokens (sorted, never empty; `query` is the span that covers them)
  combine: string; // "mean" | "sum" of their rows
  theme: string;
  colormap: string;
  _payload: ProfilePayload | Record<string, never>;
  _error: string;
}

export type ProfilePayload = PayloadOf<"profile">;

/** What picks the profile on screen. */
export type ProfilePick = Pick<ProfileTraits, "kind" | "layer" | "head" | "selection" | "combine">;

/** The name of a profile, the same as AttentionProfile._key: the query tokens as runs "a:b,c:d" and the combine. */
export function profileKey(
  kind: string,
  layer: number,
  head: number,
  selection: number[],
  combine: string,
): string {
  return `${kind}/${layer}/${head}/${selectionKey(selection)}/${combine}`;
}

/** The traits' profile key ("" combine is "mean"). */
export function pickKey(v: ProfilePick): string {
  return profileKey(v.kind, v.layer, v.head, v.selection ?? [], v.combine || "mean");
}

/** What a "profile" request asks Python for. */
export function profileRequest(v: ProfilePick): Record<string, unknown> {
  return {
    what: "profile",
    kind: v.kind,
    layer: v.layer,
    head: v.head,
    selection: v.selection ?? [],
    combine: v.combine || "mean",
  };
}

/** The first key of each unit: every token, or the document's sentences or paragraphs. */
export function unitStarts(doc: Doc | undefined, unit: Unit): number[] {
  if (!doc) return [];
  return unit === "token" ? doc.pieces.map((_, i) => i) : doc[unit];
}

/** A profile by unit: each unit's weight, each key's unit, the colour scale's top (the largest unit; 1 when 0). */
export function unitScale(
  weights: Float32Array,
  starts: number[],
  nKeys: number,
): { values: Float64Array; unitOf: Int32Array; vmax: number } {
  const values = unitSums(weights, starts);
  let vmax = 0;
  for (const v of values) if (v > vmax) vmax = v;
  return { values, unitOf: unitIndex(starts, nKeys), vmax: vmax || 1 };
}

/** The query span [from, to) typed in the two boxes, clamped to the `nq` query tokens (at least one token). */
export function queryRange(from: number, to: number, nq: number): [number, number] {
  const a = Math.max(0, Math.min(nq - 1, Math.round(from)));
  const b = Math.max(a + 1, Math.min(nq, Math.round(to)));
  return [a, b];
}

/** What a key press on the view does: grow or shrink the query span (shift + up/down, self-attention only), step
 * the head (left/right, -1 the mean) or the layer (up/down), clear the query (Escape); null: not the view's key. */
export type KeyAction = { step: number } | { head: number } | { layer: number } | { clear: true } | null;

export function keyAction(
  key: string,
  shift: boolean,
  at: { layer: number; head: number; nLayers: number; nHeads: number; selfQueries: boolean },
): KeyAction {
  if (shift && (key === "ArrowDown" || key === "ArrowUp") && at.selfQueries)
    return { step: key === "ArrowDown" ? 1 : -1 };
  if (key === "ArrowRight") return { head: Math.min(at.nHeads - 1, at.head + 1) };
  if (key === "ArrowLeft") return { head: Math.max(-1, at.head - 1) };
  if (key === "ArrowDown") return { layer: Math.min(at.nLayers - 1, at.layer + 1) };
  if (key === "ArrowUp") return { layer: Math.max(0, at.layer - 1) };
  if (key === "Escape") return { clear: true };
  return null;
}

/** The title: the document, the attention, the head and how many tokens. */
export function titleText(title: string, kind: string, layer: number, head: number, nTokens: number): string {
  return `${userText(title)} · ${kind} attention · layer ${layer} · ${head < 0 ? "mean of heads" : `head ${head}`} · ${nTokens} tokens`;
}

/** The legend's caption: per what and from which query tokens. */
export function captionText(doc: Doc, unit: Unit, selection: number[], combine: string): string {
  const queries = doc.queries.map((q) => q.trim());
  return `attention per ${unit} from the ${userText(spanCaption(queries, selection, combine || "mean"))}`;
}

/** A key's tooltip: the token's weight, its unit's (unless the unit is a token), what a click does. */
export function tipText(
  doc: Doc,
  unit: Unit,
  k: number,
  weight: number,
  u: number,
  range: [number, number],
  unitValue: number,
  selfQueries: boolean,
): string {
  const token = `${userText(doc.pieces[k])} (key ${k}): ${weight.toFixed(4)}`;
  const whole =
    unit === "token" ? "" : `\n${unit} ${u + 1} (keys ${range[0]}–${range[1] - 1}): ${unitValue.toFixed(4)}`;
  const hint = selfQueries ? "\nclick: select · shift-click: make it the query" : "\nclick: select";
  return `${token}${whole}${hint}`;
}

/** Weight of each unit: the sum of the key weights from starts[i] up to starts[i + 1] (the last unit to the end). */
export function unitSums(weights: Float32Array, starts: ArrayLike<number>): Float64Array {
  const out = new Float64Array(starts.length);
  for (let u = 0; u < starts.length; u++) {
    const end = u + 1 < starts.length ? starts[u + 1] : weights.length;
    let s = 0;
    for (let k = starts[u]; k < end; k++) s += weights[k];
    out[u] = s;
  }
  return out;
}

/** For each key, the index of the unit that holds it. */
export function unitIndex(starts: ArrayLike<number>, nKeys: number): Int32Array {
  const out = new Int32Array(nKeys);
  let u = 0;
  for (let k = 0; k < nKeys; k++) {
    while (u + 1 < starts.length && starts[u + 1] <= k) u++;
    out[k] = u;
  }
  return out;
}

/** [k0, k1) of unit u. */
export function unitRange(starts: ArrayLike<number>, u: number, nKeys: number): [number, number] {
  return [starts[u], u + 1 < starts.length ? starts[u + 1] : nKeys];
}

/** A token as it reads in the document: invisible characters marked (visibleText), but a newline stays a line break
 * after its ⏎ mark and a tab stays a tab, so paragraphs look like paragraphs. Text only: set with textContent. */
export function docText(piece: string): string {
  return piece
    .split("\n")
    .map((line) => line.split("\t").map(visibleText).join("\t"))
    .join("⏎\n");
}

/** Per pixel column of a strip `width` wide over `nKeys` keys, the largest unit value it covers (so a narrow peak
 * is never hidden by its neighbours). */
export function stripColumns(
  values: ArrayLike<number>,
  starts: ArrayLike<number>,
  nKeys: number,
  width: number,
): Float64Array {
  const cols = new Float64Array(width).fill(Number.NaN);
  const scale = width / Math.max(1, nKeys);
  for (let u = 0; u < starts.length; u++) {
    const end = u + 1 < starts.length ? starts[u + 1] : nKeys;
    const a = Math.min(width - 1, Math.floor(starts[u] * scale));
    const b = Math.max(a + 1, Math.min(width, Math.ceil(end * scale)));
    for (let x = a; x < b; x++) if (!(cols[x] >= values[u])) cols[x] = values[u];
  }
  return cols;
}

/** Black or white, whichever reads better on background (r, g, b). */
export function inkFor(r: number, g: number, b: number): string {
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum < 140 ? "#ffffff" : "#000000";
}
