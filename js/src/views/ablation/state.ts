// AblationWidget's state: the ablation the page shows, as plain data, the pure edits its controls make to it, and
// what the grid, the status line and the output panel show (no DOM).
// What Python sends is typed by js/src/generated/wire.ts (attnwidgets/viewdata/views/ablation.py); the edits mirror
// attnwidgets/runner/ablation.py (Ablation.to_dict) and attnwidgets/widgets/ablation.py (remode).

import type { FitTrait } from "../../draw/fit";
import { spanTokens } from "../../draw/span";
import type { AblationEdit, AblationSpec, OutputRow as GeneratedRow } from "../../generated/wire";
import type { PayloadOf, WireTraits } from "../../shared/wire_model";

/** A watched number before and after (generated from attnwidgets/viewdata/views/ablation.py). */
export type OutputRow = GeneratedRow;

/** Python traits of AblationWidget (attnwidgets/widgets/ablation.py). */
export interface AblationTraits extends WireTraits<"ablation"> {
  ablation: AblationDict; // Python holds an Ablation; it syncs as its dict form
  mode: string; // "zero" | "uniform" | "mean"
  kind: string; // the attention stack: "self", or "encoder" / "decoder" / "cross"
  layer: number;
  head: number;
  item: number;
  colormap: string; // "" = the theme's
  selection: number[]; // the query rows compared (positions in the maps' queries, sorted)
  combine: string; // "mean" | "sum" of the selected rows
  theme: string;
  fit: FitTrait; // draw/fit.ts
  _page_seq: number; // set by the page beside ablation and mode: which change the kernel's _payload.seq answers
  _running: boolean;
  _error: string;
}

/** What the page draws, all of it computed in Python (AblationWidget._payload, generated). */
export type Payload = PayloadOf<"ablation">;

export const DEBOUNCE_MS = 150;

/** One edit of an ablation (`head` null: the whole layer; `mode` "zero" | "uniform" | "mean" | "scale"). */
export type Edit = AblationEdit;

/** An ablation in its dict form (Ablation.to_dict). */
export type AblationDict = AblationSpec;

export const DISABLE_MODES = ["zero", "uniform", "mean"] as const;

const same = (e: Edit, stack: string, layer: number, head: number | null) =>
  e.stack === stack && e.layer === layer && e.head === head;

/** Sorted by (stack, layer, head) with a whole layer first, one edit per address, scale-1 edits dropped. */
export function canonical(ab: AblationDict): AblationDict {
  const byKey = new Map<string, Edit>();
  for (const e of ab.edits ?? []) {
    const key = `${e.stack}/${e.layer}/${e.head ?? -1}`;
    if (e.mode === "scale" && e.scale >= 1) byKey.delete(key);
    else byKey.set(key, { ...e });
  }
  const edits = [...byKey.values()].sort(
    (a, b) =>
      (a.stack < b.stack ? -1 : a.stack > b.stack ? 1 : 0) ||
      a.layer - b.layer ||
      (a.head ?? -1) - (b.head ?? -1),
  );
  return { edits };
}

export function sameAblation(a: AblationDict, b: AblationDict): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** The edit of one head (or whole layer when head is null), if any. */
export function editOf(
  ab: AblationDict,
  stack: string,
  layer: number,
  head: number | null,
): Edit | undefined {
  return (ab.edits ?? []).find((e) => same(e, stack, layer, head));
}

function disabledEdit(stack: string, layer: number, head: number | null, mode: string): Edit {
  return { stack, layer, head, mode, scale: mode === "zero" ? 0 : 1 };
}

/** Disable the head if it has no edit, else enable it (dropping its edit, a scale included). */
export function toggleHead(
  ab: AblationDict,
  stack: string,
  layer: number,
  head: number,
  mode: string,
): AblationDict {
  const rest = (ab.edits ?? []).filter((e) => !same(e, stack, layer, head));
  if (rest.length !== (ab.edits ?? []).length) return canonical({ edits: rest });
  return canonical({ edits: [...rest, disabledEdit(stack, layer, head, mode)] });
}

/** Disable every head of a layer (one whole-layer edit), or enable it again; head edits beneath are kept. */
export function toggleLayer(ab: AblationDict, stack: string, layer: number, mode: string): AblationDict {
  const rest = (ab.edits ?? []).filter((e) => !same(e, stack, layer, null));
  if (rest.length !== (ab.edits ?? []).length) return canonical({ edits: rest });
  return canonical({ edits: [...rest, disabledEdit(stack, layer, null, mode)] });
}

/** Scale a head's output by s (0: the zero edit, 1: no edit), as Ablation.with_head(layer, head, s) does. */
export function setScale(
  ab: AblationDict,
  stack: string,
  layer: number,
  head: number,
  s: number,
): AblationDict {
  const rest = (ab.edits ?? []).filter((e) => !same(e, stack, layer, head));
  const v = Math.max(0, Math.min(1, s));
  if (v >= 1) return canonical({ edits: rest });
  const edit: Edit =
    v === 0 ? disabledEdit(stack, layer, head, "zero") : { stack, layer, head, mode: "scale", scale: v };
  return canonical({ edits: [...rest, edit] });
}

/** Every disabled head and layer switched to `mode`; scaled heads keep their scale (Python's remode). */
export function withMode(ab: AblationDict, mode: string): AblationDict {
  return canonical({
    edits: (ab.edits ?? []).map((e) =>
      (DISABLE_MODES as readonly string[]).includes(e.mode)
        ? disabledEdit(e.stack, e.layer, e.head, mode)
        : e,
    ),
  });
}

/** What a grid cell shows: off (disabled by its own edit or its layer's), a scale, or nothing. */
export interface HeadState {
  layerOff: boolean;
  mode: string | null; // the head's own edit mode, null when none
  scale: number; // 1 when untouched, 0 when disabled
}

export function headState(ab: AblationDict, stack: string, layer: number, head: number): HeadState {
  const whole = editOf(ab, stack, layer, null);
  const own = editOf(ab, stack, layer, head);
  const layerOff = whole !== undefined;
  let scale = 1;
  if (own) scale = own.mode === "scale" ? own.scale : 0;
  // Python applies a layer's edit after its heads' edits, so a scaled layer multiplies a scaled head.
  if (whole) scale = whole.mode === "scale" ? scale * whole.scale : 0;
  return { layerOff, mode: own ? own.mode : null, scale };
}

/** The slider's value for a head: its scale edit, 0 when disabled by any mode, 1 when untouched. */
export function sliderValue(ab: AblationDict, stack: string, layer: number, head: number): number {
  const own = editOf(ab, stack, layer, head);
  if (!own) return 1;
  return own.mode === "scale" ? own.scale : 0;
}

/** Short cell text: × zero, U uniform, M mean, .50 for a scale, "" untouched. */
export function cellText(s: HeadState): string {
  if (s.mode === "zero") return "×";
  if (s.mode === "uniform") return "U";
  if (s.mode === "mean") return "M";
  if (s.mode === "scale") return s.scale.toFixed(2).replace(/^0/, "");
  return "";
}

/** Where a bar from 0 to v sits in a track spanning [lo, hi] (lo ≤ 0 ≤ hi), as fractions of its width. */
export function barSpan(v: number, lo: number, hi: number): { left: number; width: number } {
  const span = hi - lo || 1;
  const zero = (0 - lo) / span;
  const at = (Math.max(lo, Math.min(hi, v)) - lo) / span;
  return { left: Math.min(zero, at), width: Math.abs(at - zero) };
}

/** The [lo, hi] range that holds 0 and every finite value. */
export function barRange(values: Array<number | null>): [number, number] {
  let lo = 0;
  let hi = 0;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue;
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  if (lo === hi) hi = lo + 1;
  return [lo, hi];
}

/** A number as the panel prints it (4 decimals, integers as they are, "–" for missing). */
export function formatValue(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "–";
  return Number.isInteger(v) && Math.abs(v) >= 1 ? String(v) : v.toFixed(4);
}

export function formatDelta(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "";
  const s = formatValue(Math.abs(v));
  return v > 0 ? `+${s}` : v < 0 ? `−${s}` : `±${s}`;
}

/** What a head's button looks like: fill (the scale kept, bottom up), text, state, tooltip. */
export interface CellLook {
  background: string;
  text: string;
  disabled: boolean;
  state: string; // "on" | "layer-off" | the edit's mode
  pressed: boolean;
  title: string;
}

export function cellLook(s: HeadState, layer: number, head: number, kv: string | undefined): CellLook {
  const pct = Math.round(s.scale * 100);
  const background =
    pct >= 100
      ? "var(--aw-abl-on)"
      : pct <= 0
        ? "var(--aw-abl-off)"
        : `linear-gradient(to top, var(--aw-abl-on) ${pct}%, var(--aw-abl-off) ${pct}%)`;
  const kvText = kv !== undefined ? ` · KV head ${kv}` : "";
  const what =
    s.mode === null
      ? "on (click to disable)"
      : s.mode === "scale"
        ? `scaled ×${s.scale}`
        : `disabled (${s.mode}); click to enable`;
  return {
    background,
    text: s.layerOff ? "" : cellText(s),
    disabled: s.layerOff,
    state: s.layerOff ? "layer-off" : s.mode ? s.mode : "on",
    pressed: s.mode !== null,
    title: s.layerOff
      ? `layer ${layer} is disabled: enable the layer to edit head ${head}`
      : `layer ${layer} · head ${head}${kvText}: ${what}`,
  };
}

/** A layer button's text and tooltip. */
export function layerLook(off: boolean, layer: number, mode: string): { text: string; title: string } {
  return {
    text: `layer ${layer}${off ? " off" : ""}`,
    title: off ? `enable layer ${layer} again` : `disable every head of layer ${layer} (${mode})`,
  };
}

/** The ablation colours: a head kept, a head off, lines, tracks and the before/after bars. */
export function ablationColours(lecture: boolean): Record<string, string> {
  return {
    "--aw-abl-on": lecture ? "#0072b2" : "#6baed6",
    "--aw-abl-off": lecture ? "#000000" : "#3d4450",
    "--aw-abl-track": lecture ? "#eeeeee" : "#f3f4f6",
    "--aw-abl-before": lecture ? "#999999" : "#b6bcc4",
    "--aw-abl-after": lecture ? "#d55e00" : "#2f81f7",
  };
}

/** The status line: running, failed (the numbers shown are the last good run), or the round trip and model time. */
export function statusOf(
  running: boolean,
  error: string,
  seconds: number | undefined,
  roundtrip: number,
): { state: "running" | "error" | "idle"; text: string } {
  const state = running ? "running" : error ? "error" : "idle";
  if (running) return { state, text: "running…" };
  if (state === "error") return { state, text: "failed: the numbers below are the last good run" };
  if (typeof seconds === "number") {
    const rt = Number.isNaN(roundtrip) ? "" : `round trip ${Math.round(roundtrip)} ms · `;
    return { state, text: `${rt}model ${Math.round(seconds * 1000)} ms` };
  }
  return { state, text: "" };
}

/** Each watched name's bar range, over the before and after values of every row with that name. */
export function outputRanges(rows: OutputRow[]): Map<string, [number, number]> {
  const ranges = new Map<string, [number, number]>();
  for (const name of new Set(rows.map((r) => r.name)))
    ranges.set(name, barRange(rows.filter((r) => r.name === name).flatMap((r) => [r.before, r.after])));
  return ranges;
}

/** A change smaller than this is none (attnwidgets/viewdata/views/ablation.py NO_CHANGE): it prints as ±0.0000, is
 * muted, and sets no change axis (a float32 replay's 6e-8 filled half a track beside a number reading ±0.0000). */
export const NO_CHANGE = 5e-5;

/** The half-width of each watched number's change axis: the largest |after − before| of its rows, so the biggest
 * change fills half the track however small it is (on the value's own axis, a head's change of 0.002 on a 0.9
 * value was a flicker of the bar's end). 0 when no change reaches NO_CHANGE. */
export function deltaRanges(rows: OutputRow[]): Map<string, number> {
  const ranges = new Map<string, number>();
  for (const r of rows) {
    const d = r.delta === null || !Number.isFinite(r.delta) ? 0 : Math.abs(r.delta);
    ranges.set(r.name, Math.max(ranges.get(r.name) ?? 0, d >= NO_CHANGE ? d : 0));
  }
  return ranges;
}

/** A change's bar on a change axis of half-width `range` centred on 0: left edge and width as shares of the track. */
export function deltaSpan(delta: number | null, range: number): { left: number; width: number } {
  if (delta === null || !Number.isFinite(delta) || !(range > 0)) return { left: 0.5, width: 0 };
  const half = Math.max(-1, Math.min(1, delta / range)) / 2;
  return { left: Math.min(0.5, 0.5 + half), width: Math.abs(half) };
}

/** The change axis's label: its half-width, to as many digits as it needs to differ from 0. */
export function deltaAxisText(range: number): string {
  if (!(range > 0)) return "change: none";
  const digits = Math.max(2, Math.min(6, 1 - Math.floor(Math.log10(range))));
  return `change, axis ±${range.toFixed(digits)}`;
}

/** The class of a change's number: muted when it is (nearly) none, up or down. */
export function deltaClass(delta: number | null): string {
  const d = delta ?? 0;
  return Math.abs(d) < NO_CHANGE ? "aw-muted" : d > 0 ? "aw-abl-up" : "aw-abl-down";
}

/** The selected rows of the maps compared (attnwidgets/viewdata/views/ablation.py ablation_span): their `combine`
 * before and after over the `nk` keys, and `moved`, ½ Σ |after − before| (NaN, a masked key, counts 0). */
export function spanCompare(
  before: Float32Array,
  after: Float32Array,
  nk: number,
  selection: number[],
  combine: string,
): { before: Float32Array; after: Float32Array; moved: number } {
  const rows = (m: Float32Array) => {
    const out = new Float32Array(nk);
    const scale = combine === "sum" ? 1 : 1 / Math.max(1, selection.length);
    for (const q of selection)
      for (let k = 0; k < nk; k++) {
        const v = m[q * nk + k];
        if (Number.isFinite(v)) out[k] += v * scale;
      }
    return out;
  };
  const [b, a] = [rows(before), rows(after)];
  let moved = 0;
  for (let k = 0; k < nk; k++) moved += Math.abs(a[k] - b[k]) / 2;
  return { before: b, after: a, moved };
}

/** The caption of the rows compared: which, and how much of their attention the ablation moved. */
export function movedText(queries: string[], selection: number[], moved: number): string {
  return selection.length
    ? ` · rows ${spanTokens(queries, selection)}: ½ Σ |after − before| = ${moved.toFixed(3)}`
    : "";
}

/** The maps' caption: the stack (unless self), layer and head, and the shared colour scale's top. */
export function mapTitleText(stack: string, layer: number, head: number, vmax: number): string {
  return `${stack === "self" ? "" : `${stack} · `}layer ${layer} · head ${head}, same colour scale (max ${vmax.toFixed(3)})`;
}

/** A page change's seq (`_page_seq`): increasing across every view in the page (`counter` counts them, mod 1000),
 * and above any seq already answered, so the kernel can drop an older change (two pages on one kernel) and never
 * drops this page's newest. */
export function seqAfter(answered: number, nowMs: number, counter: number): number {
  return Math.max(nowMs * 1000 + counter, answered + 1);
}
