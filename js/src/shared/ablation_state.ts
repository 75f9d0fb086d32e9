// The ablation the page shows, as plain data, and the pure edits the AblationWidget's controls make to it.
// Mirrors attnwidgets/runner/ablation.py (Ablation.to_dict) and attnwidgets/widgets/ablation.py (remode).

export interface Edit {
  stack: string;
  layer: number;
  head: number | null; // null: the whole layer
  mode: string; // "zero" | "uniform" | "mean" | "scale"
  scale: number;
}

export interface AblationDict {
  edits: Edit[];
}

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
