// AttentionProfile's drawing: the text box's token spans (built once per document, recoloured per profile) and the
// strip of the whole document above it (state.ts says what; this says how).

import { prepareCanvas } from "../../draw/canvas";
import { type ColorMapName, lut, lutIndex } from "../../draw/colors";
import { spanRuns } from "../../draw/span";
import type { Theme } from "../../shared/theme";
import { docText, inkFor, stripColumns } from "./state";

/** The text box: one span per key token, built in one pass into a fragment (text set with textContent). */
export function buildText(text: HTMLElement, pieces: string[]): HTMLSpanElement[] {
  const frag = document.createDocumentFragment();
  const spans: HTMLSpanElement[] = [];
  pieces.forEach((piece, k) => {
    const s = document.createElement("span");
    s.textContent = docText(piece ?? "");
    s.dataset.k = String(k);
    frag.append(s);
    spans.push(s);
  });
  text.replaceChildren(frag);
  return spans;
}

/** What one colouring of the text and the strip needs. */
export interface ProfileScene {
  t: Theme;
  map: ColorMapName;
  values: Float64Array; // per unit
  unitOf: Int32Array; // per key
  starts: number[];
  vmax: number;
  selected: number[]; // [] or [k0, k1)
  selection: number[]; // the query tokens
  showQuery: boolean; // the queries are the keys (self-attention): marked on the text and the strip
}

/** Colour every span by its unit's weight; mark the query tokens and the selected region. */
export function paintSpans(spans: HTMLSpanElement[], s: ProfileScene): void {
  const table = lut(s.map);
  const picked = new Set(s.selection);
  const sel = s.selected;
  for (let k = 0; k < spans.length; k++) {
    const i = lutIndex(s.values[s.unitOf[k]], s.vmax) * 3;
    const span = spans[k];
    span.style.backgroundColor = `rgb(${table[i]},${table[i + 1]},${table[i + 2]})`;
    span.style.color = inkFor(table[i], table[i + 1], table[i + 2]);
    span.classList.toggle("aw-q", s.showQuery && picked.has(k));
    span.classList.toggle("aw-sel", sel.length === 2 && k >= sel[0] && k < sel[1]);
  }
}

/** The whole document at a glance, `width` px wide: per pixel column the largest unit it covers, the query tokens
 * marked under it, the selected region framed. */
export function paintStrip(strip: HTMLCanvasElement, s: ProfileScene, nKeys: number, width: number): void {
  const { t } = s;
  const height = t.font + 14;
  const ctx = prepareCanvas(strip, width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, width, height);
  const cols = stripColumns(s.values, s.starts, nKeys, width);
  const table = lut(s.map);
  for (let x = 0; x < width; x++) {
    const i = lutIndex(cols[x], s.vmax) * 3;
    ctx.fillStyle = `rgb(${table[i]},${table[i + 1]},${table[i + 2]})`;
    ctx.fillRect(x, 0, 1, height - 6);
  }
  const at = (k: number) => (k / Math.max(1, nKeys)) * width;
  ctx.fillStyle = t.accent;
  if (s.showQuery)
    for (const [q0, q1] of spanRuns(s.selection))
      ctx.fillRect(at(q0), height - 5, Math.max(2, at(q1) - at(q0)), 5);
  const sel = s.selected;
  if (sel.length === 2) {
    ctx.strokeStyle = t.accent;
    ctx.lineWidth = 2;
    ctx.strokeRect(at(sel[0]) + 1, 1, Math.max(2, at(sel[1]) - at(sel[0]) - 2), height - 8);
  }
  strip.dataset.width = String(width);
}
