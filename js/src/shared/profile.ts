// Pure helpers of the attention profile (js/src/profile.ts), unit-tested in test/profile.test.ts. The same sums as
// attnwidgets/viewdata/profile.py (unit_sums, unit_of), so the page colours what Python computes.

import { visibleText } from "./text";

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
