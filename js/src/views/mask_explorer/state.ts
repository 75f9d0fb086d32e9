// MaskExplorer's state: pure functions from the traits and the mask to what the page shows (no DOM): the cells'
// colours, the counts, the KV panel's layout, the cache bars, the texts. Mirrors attnwidgets/widgets/mask_explorer.py.

import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of MaskExplorer (attnwidgets/widgets/mask_explorer.py). */
export interface MaskExplorerTraits {
  mask: string; // "full" | "causal" | "sliding_window" | "global_local"
  length: number;
  window: number;
  causal: boolean;
  global_tokens: number[];
  padding: number;
  n_heads: number;
  n_kv_heads: number;
  n_layers: number;
  head_dim: number;
  seq_len: number;
  bytes_per_value: number;
  theme: string;
  _payload: PayloadOf<"mask_explorer">; // mask: (length, length) uint8, 1 = may attend
  _meta: MaskMeta;
  _error: string;
}

/** MaskExplorer's `_meta` (attnwidgets/viewdata/views/mask_explorer.py): the caption, the counts, the kv head of
 * every query head, the variant ("MHA" | "GQA" | "MQA"), the cache bytes per variant, and the padding (the last
 * `padding` positions are [PAD]). */
export type MaskMeta = MetaOf<"mask_explorer">;

/** The traits the page's controls set. */
export type Editable = Pick<
  MaskExplorerTraits,
  "mask" | "length" | "window" | "causal" | "global_tokens" | "padding" | "n_heads" | "n_kv_heads" | "seq_len"
>;

export const MASKS: Array<[string, string]> = [
  ["full", "full (encoder)"],
  ["causal", "causal (decoder)"],
  ["sliding_window", "sliding window"],
  ["global_local", "global + local"],
];
export const HEADS = [1, 2, 4, 8, 12, 16, 32, 64];
export const SEQ = [512, 2048, 4096, 8192, 32768, 131072];

/** Whether mask kind `kind` has a window (and so the window slider and the causal box). */
export function hasWindow(kind: string): boolean {
  return kind === "sliding_window" || kind === "global_local";
}

/** A new length `v`: the window and the padding shrink with it (the window at most v, the padding at most v - 1). */
export function lengthChange(v: number, window: number, padding: number): Partial<Editable> {
  return { length: v, window: Math.min(window, v), padding: Math.min(padding, v - 1) };
}

/** A byte count for people: "2.00 GiB", "512 MiB", "64 KiB". */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  const text = v >= 100 || Number.isInteger(v) ? v.toFixed(0) : v.toFixed(2);
  return `${text} ${units[u]}`;
}

/** Divisors of n in increasing order (the n_kv_heads that work for n query heads). */
export function divisors(n: number): number[] {
  const out: number[] = [];
  for (let k = 1; k <= n; k++) if (n % k === 0) out.push(k);
  return out;
}

/** Positions typed as "0, 8 15" -> [0, 8, 15]: integers in 0..n-1, sorted, without repeats. */
export function parsePositions(text: string, n: number): number[] {
  const seen = new Set<number>();
  for (const part of text.split(/[\s,;]+/)) {
    if (!/^\d+$/.test(part)) continue;
    const v = Number(part);
    if (v < n) seen.add(v);
  }
  return [...seen].sort((a, b) => a - b);
}

/** The mask panel's side (CSS px): the theme's, or fitted, what the box leaves beside the KV panel and above the
 * counts (at least 80 px). */
export function maskSide(
  big: boolean,
  pad: number,
  room: { width: number; height: number } | null,
  taken: { kvWidth: number; gap: number; statsHeight: number },
): number {
  const natural = big ? 460 : 340;
  if (!room) return natural;
  const across = room.width - taken.kvWidth - taken.gap - pad - 8;
  const down = room.height - taken.statsHeight - pad - 8;
  return Math.max(80, Math.min(natural, across, down));
}

/** The mask's colours: a key a query may see (blue; orange through a global token), a masked pair (light grey). */
export function maskColors(big: boolean): { on: string; viaGlobal: string; off: string; pad: string } {
  return big
    ? { on: "#0072b2", viaGlobal: "#e69f00", off: "#f0f0f0", pad: "#d55e00" }
    : { on: "#2b6cb0", viaGlobal: "#dd8452", off: "#f3f4f6", pad: "#c05621" };
}

/** The colour of cell (q, k): allowed or not, through a global token or not. */
export function cellColor(
  colors: { on: string; viaGlobal: string; off: string },
  ok: boolean,
  globals: Set<number>,
  q: number,
  k: number,
): string {
  if (!ok) return colors.off;
  return globals.has(q) || globals.has(k) ? colors.viaGlobal : colors.on;
}

/** The global tokens that colour the mask (only the global + local mask has them). */
export function globalSet(mask: string, globalTokens: number[]): Set<number> {
  return new Set(mask === "global_local" ? globalTokens : []);
}

/** The first [PAD] position of an n-token mask (n when there is no padding). */
export function padStart(n: number, padding: number | undefined): number {
  return n - (padding ?? 0);
}

/** How many cells of an (n, n) mask are allowed (> 0.5). */
export function countAllowed(data: ArrayLike<number>, n: number): number {
  let allowed = 0;
  for (let i = 0; i < n * n; i++) if (data[i] > 0.5) allowed++;
  return allowed;
}

/** The line under the mask: the pairs computed, the keys each query sees, what the colours and the outline mean. */
export function statsText(meta: MaskMeta, globals: number, padFrom: number, n: number): string {
  const share = meta.total ? (100 * meta.allowed) / meta.total : 0;
  const keys = meta.keys_min === meta.keys_max ? meta.keys_max : `${meta.keys_min}–${meta.keys_max}`;
  let text = `${meta.allowed} of ${meta.total} query–key pairs computed (${share.toFixed(0)} %); each query sees ${keys} keys`;
  if (globals) text += "; blue: the local window, orange: through a global token";
  if (padFrom < n) text += `; keys ${padFrom}–${n - 1} are [PAD] (outlined): weight 0 for every query`;
  return text;
}

/** The view's title: the mask, its window, the length. */
export function maskTitle(mask: string, window: number, n: number): string {
  const label = MASKS.find(([k]) => k === mask)?.[1] ?? mask;
  return `Attention masks · ${label}${hasWindow(mask) ? ` · w = ${window}` : ""} · ${n} tokens`;
}

/** The tooltip of cell (row, col) of an (n, n) mask whose last keys from `padFrom` on are [PAD]. */
export function maskTip(
  data: ArrayLike<number>,
  n: number,
  row: number,
  col: number,
  padFrom: number,
): string {
  const ok = data[row * n + col] > 0.5;
  const padNote =
    col >= padFrom
      ? `\nkey ${col} is [PAD]: masked for every query`
      : row >= padFrom
        ? `\nquery ${row} is [PAD]: computed, then thrown away`
        : "";
  let seen = 0;
  for (let k = 0; k < n; k++) if (data[row * n + k] > 0.5) seen++;
  return (
    `query ${row} → key ${col}: ${ok ? "attends" : "masked"}\n` +
    `query ${row} sees ${seen} key${seen === 1 ? "" : "s"}${padNote}`
  );
}

/** Where the KV panel draws `nh` query heads over `nkv` key/value heads: box size, canvas size, x of each box. */
export interface KvLayout {
  size: number; // a query box's side; a kv box is twice as wide
  width: number;
  height: number;
  font: number;
  qY: number;
  kvY: number;
  qX: (i: number) => number;
  kvX: (j: number) => number;
}

export function kvLayout(nh: number, nkv: number, big: boolean): KvLayout {
  const size = big ? 22 : 14;
  const gap = Math.max(3, Math.min(big ? 14 : 10, (big ? 560 : 420) / Math.max(nh, 1) - size));
  const width = Math.max(big ? 420 : 320, 2 * size + 12 + nh * (size + gap));
  const height = big ? 170 : 130;
  const font = big ? 15 : 11;
  const base = size + 6; // room for the first kv box, which is twice as wide as a query box
  const span = nh * (size + gap) - gap;
  const kvStep = nkv > 1 ? (span - size) / (nkv - 1) : 0;
  return {
    size,
    width,
    height,
    font,
    qY: font + 8,
    kvY: height - size - font - 8,
    qX: (i) => base + i * (size + gap),
    kvX: (j) => (nkv > 1 ? base + j * kvStep : base + (span - size) / 2),
  };
}

/** The text under the KV panel: who shares what, and what the cache holds. */
export function kvText(
  variant: string,
  nh: number,
  nkv: number,
  cache: Pick<MaskExplorerTraits, "n_layers" | "head_dim" | "seq_len" | "bytes_per_value">,
): string {
  const group = nh / Math.max(nkv, 1);
  return (
    `${variant}: ${nkv === nh ? "every query head has its own K/V" : `${group} query heads share each K/V head`}. ` +
    `KV cache for ${cache.n_layers} layers × ${cache.head_dim} dims × ` +
    `${cache.seq_len.toLocaleString("en")} tokens at ${cache.bytes_per_value} bytes:`
  );
}

/** One bar of the cache comparison: its label, its size in bytes and words, its width (px), whether it is shown. */
export interface CacheBar {
  name: string;
  label: string;
  bytes: number;
  text: string;
  width: number;
  current: boolean;
}

/** The MHA / GQA / MQA cache bars, the longest `full` px wide. */
export function cacheBars(meta: Pick<MaskMeta, "cache" | "variant">, nkv: number, full = 220): CacheBar[] {
  const most = Math.max(...Object.values(meta.cache ?? {}), 1);
  return ["MHA", "GQA", "MQA"].map((name) => {
    const bytes = meta.cache?.[name] ?? 0;
    return {
      name,
      label: name === "GQA" ? `GQA (${nkv})` : name,
      bytes,
      text: formatBytes(bytes),
      width: Math.max(2, (bytes / most) * full),
      current: name === meta.variant,
    };
  });
}
