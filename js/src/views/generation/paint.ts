// GenerationView's drawing: the text's token colours, the steps x keys map, the top-k list and the span-share
// panel (state.ts says what; this says how).

import { drawMatrix, fitToken, labelPlan, prepareCanvas } from "../../draw/canvas";
import { type ColorMapName, categorical, readableOn, rgbAt } from "../../draw/colors";
import { fmt, textOn } from "../../draw/heads";
import { type Sampling, reshape } from "../../draw/sampling";
import type { Matrix } from "../../shared/buffers";
import { h } from "../../shared/dom";
import { tokenLabel, visibleText } from "../../shared/text";
import type { Theme } from "../../shared/theme";
import {
  type GenerationMeta,
  type MapGeometry,
  currentIndex,
  finiteMax,
  keySpan,
  textLines,
  topkRows,
} from "./state";

/** The text box's token spans, as [line 0 (prompt/source), line 1 (output)]. */
export type TextSpans = HTMLSpanElement[][];

/** Fill the text box with a span per token (state.textLines), the line free to break between any two; returns
 * them by line. */
export function buildText(text: HTMLElement, m: GenerationMeta): TextSpans {
  text.replaceChildren();
  const spans: TextSpans = [[], []];
  for (const { label, tokens } of textLines(m)) {
    const line = h("div", { className: "aw-gen-line" });
    if (m.encoder_decoder) line.append(h("span", { className: "aw-gen-label", text: label }));
    for (const tok of tokens) {
      const s = h("span", {
        className: "aw-tok",
        "data-line": tok.line,
        "data-index": tok.index,
        text: visibleText(tok.text),
      });
      if (tok.pos !== null) s.dataset.pos = String(tok.pos);
      spans[tok.line].push(s);
      // a line may break between any two tokens: a token's own spaces are kept (white-space: pre), so without this a
      // long chat prompt's line had no break and ran past the output's right edge
      line.append(s, h("wbr"));
    }
    text.append(line);
  }
  return spans;
}

/** What one paint of the text needs. */
export interface TextScene {
  t: Theme;
  m: GenerationMeta;
  step: number;
  kind: string;
  weights: Float32Array | null; // the step's row of the matrix (null: not here yet)
  vmax: number;
  map: ColorMapName;
  selection: number[];
  view: string;
}

/** Each key token's background the weight the step's query gives it; tokens not written yet dimmed, the step's own
 * token outlined, the selection underlined. */
export function paintText(text: HTMLElement, spans: TextSpans, s: TextScene): void {
  for (const line of spans)
    for (const span of line) {
      span.style.background = "";
      span.style.color = "";
      span.classList.remove("aw-current", "aw-future");
      delete span.dataset.weight;
      span.title = "";
    }
  const out = spans[1];
  const current = currentIndex(s.m.encoder_decoder, s.step);
  for (let i = current + 1; i < out.length; i++) out[i].classList.add("aw-future");
  out[current]?.classList.add("aw-current");
  const picked = new Set(s.selection);
  for (const line of spans)
    for (const span of line)
      span.classList.toggle("aw-sel", span.dataset.pos !== undefined && picked.has(Number(span.dataset.pos)));
  text.dataset.selection = [...picked].sort((a, b) => a - b).join(",");
  if (!s.weights) return;
  for (let k = 0; k < s.weights.length; k++) {
    const v = s.weights[k];
    if (!Number.isFinite(v)) continue;
    const [li, idx] = keySpan(s.kind, s.m.encoder_decoder, s.m.prompt.length, k);
    const span = spans[li][idx];
    if (!span) continue;
    const rgb = rgbAt(s.map, v, s.vmax || 1);
    span.style.background = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
    span.style.color = textOn(rgb);
    span.dataset.weight = String(v);
    span.dataset.key = String(k);
    span.title = `${fmt(v)}`;
  }
  text.dataset.step = String(s.step);
  text.dataset.view = s.view;
  text.style.fontSize = `${s.t.font + 2}px`;
}

/** What one paint of the steps x keys map needs. */
export interface MapScene {
  t: Theme;
  g: MapGeometry;
  matrix: Matrix | null; // null: not here yet (the frame and labels only)
  map: ColorMapName;
  rowLabels: string[]; // the generated tokens
  colLabels: string[]; // the keys
  step: number;
  view: string;
}

/** The steps x keys heatmap, the current step outlined; its layout goes to the canvas's data set. */
export function paintMatrix(canvas: HTMLCanvasElement, s: MapScene): void {
  const { t, g } = s;
  const n = s.rowLabels.length;
  const cols = s.colLabels.length;
  const ctx = prepareCanvas(canvas, g.width, g.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, g.width, g.height);
  if (s.matrix) {
    const vmax = finiteMax(s.matrix.data) || 1;
    drawMatrix(ctx, s.matrix.data, n, cols, g.x0, g.y0, cols * g.cell, n * g.cellH, vmax, s.map);
  }
  if (g.showLabels) mapLabels(ctx, s);
  ctx.strokeStyle = t.accent;
  ctx.lineWidth = 2;
  ctx.strokeRect(g.x0 - 1, g.y0 + s.step * g.cellH - 1, cols * g.cell + 2, g.cellH + 2);
  Object.assign(canvas.dataset, {
    x0: String(g.x0),
    y0: String(g.y0),
    cell: String(g.cell),
    cellH: String(g.cellH), // a row's height: taller than a column is wide when there are few steps
    rows: String(n),
    cols: String(cols),
    step: String(s.step),
    view: s.view,
    ready: s.matrix ? "1" : "0",
  });
}

/** The steps' tokens down the left (the current one in the accent) and the keys up the top. */
function mapLabels(ctx: CanvasRenderingContext2D, s: MapScene): void {
  const { t, g } = s;
  // lecture: 14 px labels at least, every k-th token on small cells (labelPlan: the rows by their height, the keys
  // by their width, so a long prompt's keys thin out with the map instead of being left out); light: as before
  const lecture = t.name === "lecture";
  const labelT = { ...t, font: Math.max(10, t.font - 2) };
  const rowPlan = labelPlan(labelT, g.cellH);
  const colPlan = labelPlan(labelT, g.cell);
  const size = lecture ? Math.min(rowPlan.size, colPlan.size) : Math.max(10, t.font - 2);
  ctx.font = `${size}px ${t.fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  s.rowLabels.forEach((tok, q) => {
    if (lecture && !rowPlan.named(q, s.step)) return;
    ctx.fillStyle = q === s.step ? t.accent : t.fg;
    ctx.fillText(fitToken(ctx, tok ?? "", g.x0 - 8), g.x0 - 4, g.y0 + (q + 0.5) * g.cellH);
  });
  ctx.textAlign = "left";
  s.colLabels.forEach((tok, k) => {
    if (lecture && !colPlan.named(k)) return;
    ctx.save();
    ctx.translate(g.x0 + (k + 0.5) * g.cell, g.y0 - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.fillStyle = t.fg;
    ctx.fillText(fitToken(ctx, tok ?? "", g.y0 - 8), 0, 0);
    ctx.restore();
  });
}

/** The step's next-token probabilities, the chosen token in bold. With the sampling playground on (`sampling`),
 * each row also shows the sampler's probability after temperature, top-k, top-p and min-p (draw/sampling.ts), the
 * model's own as a thin outlined bar under it, and a token a rule cut greyed with the rule's name. Both bars are
 * on one 0-100 % axis. */
export function paintTopk(
  topk: HTMLElement,
  m: GenerationMeta,
  probs: Matrix | null,
  step: number,
  sampling: Sampling | null = null,
): void {
  const heading = sampling
    ? "next-token probabilities: the sampler's (bar), the model's (outline)"
    : "next-token probabilities";
  topk.replaceChildren(h("div", { className: "aw-muted", text: heading }));
  if (!probs) return;
  const rows = topkRows(probs, m.topk_tokens, m.generated[step], step);
  const shaped = sampling
    ? reshape(
        rows.map((r) => r.p),
        sampling,
      )
    : null;
  topk.dataset.after = shaped ? JSON.stringify(shaped.after.map((v) => Number(v.toFixed(6)))) : "";
  topk.dataset.cut = shaped ? JSON.stringify(shaped.cut) : "";
  rows.forEach((r, j) => {
    const cut = shaped?.cut[j] ?? "";
    const shown = shaped ? shaped.after[j] : r.p;
    const bars = shaped
      ? h(
          "span",
          { className: "aw-topk-bars" },
          h("span", { className: "aw-topk-bar", style: `width: ${Math.round(shown * 120)}px` }),
          h("span", { className: "aw-topk-before", style: `width: ${Math.round(r.p * 120)}px` }),
        )
      : h("span", { className: "aw-topk-bar", style: `width: ${Math.round(r.p * 120)}px` });
    topk.append(
      h(
        "div",
        {
          className: `aw-topk-row${r.chosen ? " aw-chosen" : ""}${cut ? " aw-cut" : ""}`,
          "data-prob": String(r.p),
          "data-cut": cut,
        },
        h("span", { text: tokenLabel(r.token, 16), style: "min-width: 6em; display: inline-block" }),
        bars,
        h("span", { text: cut ? `cut by ${cut}` : `${(shown * 100).toFixed(1)}%` }),
      ),
    );
  });
}

/** What one paint of the span-share panel needs. */
export interface ShareScene {
  t: Theme;
  data: Matrix; // steps x lines
  labels: string[];
  ymax: number;
  step: number;
  width: number;
  height: number;
  key: string;
}

/** Where the share panel's plot sits on its canvas. */
export interface ShareLayout {
  x0: number;
  y0: number;
  w: number;
  h: number;
  steps: number;
}

/** The span-share panel: one line per layer (or head) over the steps, the current step marked; returns the plot's
 * layout (a click picks a step by it). */
export function paintShare(canvas: HTMLCanvasElement, s: ShareScene): ShareLayout {
  const { t, width, height } = s;
  const [n, nLines] = s.data.shape;
  const font = Math.max(10, t.font - 2);
  const legendW = nLines <= 16 ? Math.round(font * 7) : 0;
  const x0 = Math.round(font * 3.2);
  const y0 = Math.round(font * 0.8);
  const l: ShareLayout = { x0, y0, w: width - x0 - legendW - 12, h: height - y0 - font * 2.2, steps: n };
  const ctx = prepareCanvas(canvas, width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, width, height);
  ctx.font = `${font}px ${t.fontFamily}`;
  const xOf = (st: number) => l.x0 + (n > 1 ? st / (n - 1) : 0.5) * l.w;
  const yOf = (v: number) => l.y0 + l.h - (Math.max(0, Math.min(s.ymax, v)) / s.ymax) * l.h;
  shareAxes(ctx, s, l, xOf, yOf);
  const colours = shareLines(ctx, s, l, font, xOf, yOf);
  Object.assign(canvas.dataset, {
    x0: String(l.x0),
    y0: String(l.y0),
    w: String(l.w),
    h: String(l.h),
    steps: String(n),
    lines: String(nLines),
    ymax: String(s.ymax),
    colours: colours.join(","),
    labels: JSON.stringify(s.labels), // each line's name (a layer, a head, a chat prompt's role), for tests
    key: s.key,
    step: String(s.step),
  });
  return l;
}

/** The share panel's grid lines at 0, ½ and 1 of the top, the step axis and the current step (dashed, in the
 * foreground colour: the lecture accent is also a line's colour). */
function shareAxes(
  ctx: CanvasRenderingContext2D,
  s: ShareScene,
  l: ShareLayout,
  xOf: (st: number) => number,
  yOf: (v: number) => number,
): void {
  const { t } = s;
  const n = l.steps;
  ctx.strokeStyle = t.grid;
  ctx.lineWidth = 1;
  ctx.fillStyle = t.fg;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (const f of [0, 0.5, 1]) {
    const y = yOf(f * s.ymax);
    ctx.beginPath();
    ctx.moveTo(l.x0, y);
    ctx.lineTo(l.x0 + l.w, y);
    ctx.stroke();
    ctx.fillText(fmt(f * s.ymax, 2), l.x0 - 4, y);
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillText("0", xOf(0), l.y0 + l.h + 4);
  if (n > 1) ctx.fillText(String(n - 1), xOf(n - 1), l.y0 + l.h + 4);
  ctx.fillText("step", l.x0 + l.w / 2, l.y0 + l.h + 4);
  ctx.strokeStyle = t.fg;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([5, 4]);
  ctx.beginPath();
  ctx.moveTo(xOf(s.step), l.y0);
  ctx.lineTo(xOf(s.step), l.y0 + l.h);
  ctx.stroke();
  ctx.setLineDash([]);
}

/** One line per layer or head (a legend beside them when 16 or fewer); returns their colours. */
function shareLines(
  ctx: CanvasRenderingContext2D,
  s: ShareScene,
  l: ShareLayout,
  font: number,
  xOf: (st: number) => number,
  yOf: (v: number) => number,
): string[] {
  const { t, data } = s;
  const [n, nLines] = data.shape;
  ctx.lineWidth = t.name === "lecture" ? 3 : 2;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const colours: string[] = [];
  for (let j = 0; j < nLines; j++) {
    const colour = readableOn(categorical(j), t.bg, 3);
    colours.push(colour);
    ctx.strokeStyle = colour;
    ctx.beginPath();
    for (let st = 0; st < n; st++) {
      const v = data.data[st * nLines + j];
      if (st === 0) ctx.moveTo(xOf(st), yOf(v));
      else ctx.lineTo(xOf(st), yOf(v));
    }
    if (n === 1) ctx.lineTo(xOf(0) + 2, yOf(data.data[j]));
    ctx.stroke();
    if (nLines <= 16) {
      ctx.fillStyle = colour;
      ctx.fillText(s.labels[j] ?? "", l.x0 + l.w + 8, l.y0 + (j + 0.5) * Math.min(font * 1.2, l.h / nLines));
    }
  }
  return colours;
}
