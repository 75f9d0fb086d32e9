// QKStepThrough's drawing: each step of attention on its own canvas (state.ts says what; this says how).

import { LECTURE_LABEL, fitLabel, fitToken, labelRoom, prepareCanvas, textMeasurer } from "../../draw/canvas";
import { type DivergingName, absMax, divergingCss } from "../../draw/diverging";
import { isolate, tokenLabel } from "../../shared/text";
import type { Theme } from "../../shared/theme";
import {
  type Geometry,
  type HeadData,
  type QueryRow,
  angleCss,
  angleWidth,
  fitGeometry,
  fontFor,
  keyPos,
  naturalGeometry,
  panelWidths,
  products,
  strongestKey,
  tagWidth,
  vectorRow,
} from "./state";

/** Everything one paint of the panels needs. */
export interface Scene {
  t: Theme;
  map: DivergingName;
  hd: HeadData;
  r: QueryRow;
  i: number; // the query
  g: Geometry;
  font: number;
  labels: string[]; // each key row's label
  nWin: number; // rows of the window's own keys (the rest are far keys)
  hoverRow: number;
  selected: Set<number>; // the selected query tokens, marked in panel 1 where keys are the same tokens
  selfAttention: boolean;
  queryToken: string;
}

/** The natural geometry, the label column as wide as the longest label (at most 140 px, 190 in a lecture). */
export function geometry(t: Theme, d: number, m: number, labels: string[]): Geometry {
  const width = labelRoom(textMeasurer(), [...labels, "q · query"], t, t.name === "lecture" ? 190 : 140);
  return naturalGeometry(t, d, m, width);
}

/**
 * The geometry that fits `room` (when fitted: all panels side by side, every key row on screen), else the natural
 * one, and the font for it. Fitted, a panel's title wraps to its canvas's width (the titles made the panels wider
 * than the canvases).
 */
export function fitPanels(
  row: HTMLElement,
  canvases: Record<string, HTMLCanvasElement>,
  room: { width: number; height: number } | null,
  scene: { t: Theme; hd: HeadData; labels: string[]; r: QueryRow },
): { g: Geometry; font: number } {
  const { t, hd, labels, r } = scene;
  const bias = Boolean(r.bias); // the "+ bias" panel
  const rotaryDim = r.qAngle ? 2 * r.qAngle.length : 0; // a rotary model's three panels
  const natural = geometry(t, hd.d, hd.m, labels);
  const chrome = row.getBoundingClientRect().height - canvases.qk.getBoundingClientRect().height;
  const g = room
    ? fitGeometry(
        natural,
        hd.d,
        hd.m,
        { width: room.width, height: room.height - chrome },
        bias,
        rotaryDim,
        t.name === "lecture" ? LECTURE_LABEL : 0,
      )
    : natural;
  const heads = row.querySelectorAll<HTMLElement>(".aw-qk-head");
  panelWidths(g, hd.d, bias, rotaryDim).forEach((w, n) => {
    if (heads[n]) heads[n].style.maxWidth = room ? `${w}px` : "";
  });
  return { g, font: room ? fontFor(t, g) : Math.min(t.font, g.rh - 3) };
}

/** One vector as a row of coloured cells. */
function strip(
  ctx: CanvasRenderingContext2D,
  x: number,
  y: number,
  g: Geometry,
  v: ArrayLike<number>,
  vmax: number,
  map: DivergingName,
  alpha = 1,
): void {
  ctx.globalAlpha = alpha;
  for (let c = 0; c < v.length; c++) {
    ctx.fillStyle = divergingCss(map, v[c], vmax);
    ctx.fillRect(x + c * g.cw, y + 1, g.cw, g.rh - 2);
  }
  ctx.globalAlpha = 1;
}

const rowY = (s: Scene, j: number) => s.g.top + j * s.g.rh;
const showLabels = (s: Scene) => s.g.rh >= 12;
const height = (s: Scene) => s.g.top + s.g.rh * s.hd.m + 4;

/** A canvas `w` wide, cleared to the background, the hovered row shaded. */
function setup(s: Scene, canvas: HTMLCanvasElement, w: number): CanvasRenderingContext2D {
  const { t, g } = s;
  const ctx = prepareCanvas(canvas, w, height(s));
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, w, height(s));
  ctx.font = `${s.font}px ${t.fontFamily}`;
  ctx.textBaseline = "middle";
  if (s.hoverRow >= 0) {
    ctx.fillStyle = t.grid;
    ctx.globalAlpha = 0.45;
    ctx.fillRect(0, rowY(s, s.hoverRow), w, g.rh);
    ctx.globalAlpha = 1;
  }
  return ctx;
}

/** A masked key's row: greyed out. */
function maskedRow(s: Scene, ctx: CanvasRenderingContext2D, j: number, x: number, w: number): void {
  ctx.fillStyle = s.t.grid;
  ctx.globalAlpha = 0.35;
  ctx.fillRect(x, rowY(s, j) + 1, w, s.g.rh - 2);
  ctx.globalAlpha = 1;
}

/** ① q and k strips (`q`, `k`: after the rotation, or before it), with token labels when `labels` (the query's own
 * row marked). */
function paintQK(
  s: Scene,
  canvas: HTMLCanvasElement,
  q: Float32Array,
  k: Float32Array,
  labels: boolean,
): void {
  const { t, g, hd, r, map } = s;
  const stripW = hd.d * g.cw;
  const qkMax = absMax(q, k);
  const left = labels ? g.label : 4;
  const ctx = setup(s, canvas, left + stripW + 8);
  ctx.textAlign = "right";
  if (labels) {
    ctx.fillStyle = t.accent;
    ctx.fillText(
      isolate(fitLabel(ctx, `q · ${isolate(tokenLabel(s.queryToken))}`, g.label - 6)),
      g.label - 4,
      g.rh * 0.5 + 1,
    );
  }
  strip(ctx, left, 0, g, q, qkMax, map);
  for (let j = 0; j < hd.m; j++) {
    if (labels && showLabels(s)) {
      const p = keyPos(hd, j);
      const picked = s.selfAttention && s.selected.has(p);
      ctx.fillStyle = s.selfAttention && (p === s.i || picked) ? t.accent : j >= s.nWin ? t.muted : t.fg;
      ctx.font = `${picked ? "700 " : ""}${s.font}px ${t.fontFamily}`;
      ctx.fillText(fitToken(ctx, s.labels[j], g.label - 6, 28), g.label - 4, rowY(s, j) + g.rh / 2);
    }
    if (labels && s.selfAttention && s.selected.has(keyPos(hd, j))) {
      ctx.fillStyle = t.accent; // a bar left of each selected token's label, as the heatmap outlines its rows
      ctx.fillRect(0, rowY(s, j) + 1, 3, g.rh - 2);
    }
    if (j === s.nWin && j > 0) {
      ctx.fillStyle = t.muted;
      ctx.fillRect(0, rowY(s, j), left + stripW, 1);
    }
    strip(ctx, left, rowY(s, j), g, vectorRow(k, hd.d, j), qkMax, map, r.allowed[j] ? 1 : 0.25);
  }
  canvas.dataset.vmax = String(qkMax);
}

/** The angle each rotating pair turns: the query's on top, each key's in its row, a colour wheel, a pair two strip
 * cells wide (as wide as the dimensions it turns). */
function paintAngles(s: Scene, canvas: HTMLCanvasElement, qAngle: Float32Array): void {
  const { g, hd, r } = s;
  const half = qAngle.length;
  const ctx = setup(s, canvas, angleWidth(g, 2 * half));
  const cells = (y: number, angles: ArrayLike<number>, alpha: number) => {
    ctx.globalAlpha = alpha;
    for (let p = 0; p < half; p++) {
      ctx.fillStyle = angleCss(angles[p]);
      ctx.fillRect(4 + 2 * p * g.cw, y + 1, 2 * g.cw, g.rh - 2);
    }
    ctx.globalAlpha = 1;
  };
  cells(0, qAngle, 1);
  for (let j = 0; j < hd.m; j++)
    cells(rowY(s, j), vectorRow(hd.arrays.angle, half, j), r.allowed[j] ? 1 : 0.25);
  canvas.dataset.angles = Array.from(qAngle, (x) => x.toFixed(5)).join(",");
}

/** ② q ⊙ k */
function paintProducts(s: Scene, canvas: HTMLCanvasElement): void {
  const prods = products(s.hd, s.r.q);
  const prodMax = absMax(...prods);
  const ctx = setup(s, canvas, s.hd.d * s.g.cw + 8);
  for (let j = 0; j < s.hd.m; j++)
    strip(ctx, 4, rowY(s, j), s.g, prods[j], prodMax, s.map, s.r.allowed[j] ? 1 : 0.25);
}

/** ③ q·k, ④ scaled, + bias: signed bars around a zero axis, numbers (and `tags`, T5's buckets) on the right. */
function paintBars(
  s: Scene,
  canvas: HTMLCanvasElement,
  values: Float32Array,
  fmt: (x: number) => string,
  tags?: string[],
): void {
  const { t, g, r } = s;
  // A column of tags (T5's buckets) after the numbers, as wide as its widest tag at the font drawn (a lecture's 14 px
  // "b20" is wider than the column the geometry alone leaves).
  const probe = textMeasurer();
  probe.font = `${s.font}px ${t.fontFamily}`;
  const tw = tags
    ? Math.max(tagWidth(g), Math.ceil(Math.max(0, ...tags.map((x) => probe.measureText(x).width))) + 6)
    : 0;
  const w = g.bar + g.num + 8 + tw;
  const c = setup(s, canvas, w);
  const vmax = absMax(values.filter((_, j) => r.allowed[j])) || 1;
  const zero = 4 + g.bar / 2;
  c.fillStyle = t.muted;
  c.textAlign = "center";
  c.fillText(`±${fmt(vmax)}`, zero, g.rh * 0.5 + 1);
  c.fillStyle = t.grid;
  c.fillRect(zero, g.top - 2, 1, g.rh * s.hd.m + 4);
  c.textAlign = "right";
  for (let j = 0; j < s.hd.m; j++) {
    const y = rowY(s, j) + g.rh / 2;
    if (!r.allowed[j]) {
      maskedRow(s, c, j, 4, g.bar);
      if (showLabels(s)) {
        c.fillStyle = t.muted;
        c.fillText("masked", w - 4, y);
      }
      continue;
    }
    const x = values[j];
    const len = (Math.abs(x) / vmax) * (g.bar / 2);
    c.fillStyle = divergingCss(s.map, x, vmax * 0.6);
    c.fillRect(x >= 0 ? zero : zero - len, rowY(s, j) + 2, Math.max(1, len), g.rh - 4);
    if (showLabels(s)) {
      c.fillStyle = t.fg;
      c.fillText(fmt(x), w - 4 - tw, y);
      if (tags) {
        c.fillStyle = t.muted;
        c.fillText(tags[j], w - 4, y);
      }
    }
  }
}

/** ⑤ softmax: bars from 0 to 1, the strongest key (`best`) outlined. */
function paintSoftmax(s: Scene, canvas: HTMLCanvasElement, best: number): void {
  const { t, g, r } = s;
  const w5 = g.bar + g.num + 8;
  const ctx = setup(s, canvas, w5);
  ctx.fillStyle = t.muted;
  ctx.textAlign = "left";
  ctx.fillText("0", 4, g.rh * 0.5 + 1);
  ctx.textAlign = "right";
  ctx.fillText("1", 4 + g.bar, g.rh * 0.5 + 1);
  for (let j = 0; j < s.hd.m; j++) {
    if (!r.allowed[j]) {
      maskedRow(s, ctx, j, 4, g.bar);
      continue;
    }
    ctx.fillStyle = t.grid;
    ctx.globalAlpha = 0.3;
    ctx.fillRect(4, rowY(s, j) + g.rh / 2, g.bar, 1);
    ctx.globalAlpha = 1;
    ctx.fillStyle = j === best ? t.accent : t.name === "lecture" ? "#0072b2" : "#2171b5";
    ctx.fillRect(4, rowY(s, j) + 2, Math.max(1, r.weights[j] * g.bar), g.rh - 4);
    if (showLabels(s)) {
      ctx.fillStyle = t.fg;
      ctx.fillText(r.weights[j].toFixed(3), w5 - 4, rowY(s, j) + g.rh / 2);
    }
  }
}

/** ⑥ the values, faded by weight, and their weighted sum on top. */
function paintSum(s: Scene, canvas: HTMLCanvasElement, best: number): void {
  const { t, g, r, hd } = s;
  const stripW = hd.d * g.cw;
  const vMax = absMax(hd.arrays.v, r.out);
  const wMax = best >= 0 ? r.weights[best] : 1;
  const ctx = setup(s, canvas, stripW + 8);
  strip(ctx, 4, 0, g, r.out, vMax, s.map);
  ctx.strokeStyle = t.accent;
  ctx.lineWidth = 1.5;
  ctx.strokeRect(3.5, 0.5, stripW + 1, g.rh - 1);
  for (let j = 0; j < hd.m; j++) {
    if (r.allowed[j])
      strip(
        ctx,
        4,
        rowY(s, j),
        g,
        vectorRow(hd.arrays.v, hd.d, j),
        vMax,
        s.map,
        0.08 + 0.92 * (r.weights[j] / (wMax || 1)),
      );
    else maskedRow(s, ctx, j, 4, stripW);
  }
}

/** Paint every panel of `canvases` (by panel id); returns the strongest key's row. The canvases carry their numbers
 * in data attributes for tests. */
export function paintPanels(s: Scene, canvases: Record<string, HTMLCanvasElement>, scaling: number): number {
  const { r, hd } = s;
  const rope = Boolean(r.qPre && r.logitsPre && r.qAngle && canvases.pre);
  if (rope && r.qPre && r.logitsPre && r.qAngle) {
    paintQK(s, canvases.pre, r.qPre, hd.arrays.k_pre, true);
    paintBars(s, canvases.dotpre, r.logitsPre, (x) => x.toFixed(2));
    canvases.dotpre.dataset.logits = Array.from(r.logitsPre, (x) => x.toFixed(6)).join(",");
    paintAngles(s, canvases.angle, r.qAngle);
  }
  paintQK(s, canvases.qk, r.q, hd.arrays.k, !rope);
  canvases.dot.dataset.logits = Array.from(r.logits, (x) => x.toFixed(6)).join(",");
  paintProducts(s, canvases.prod);
  paintBars(s, canvases.dot, r.logits, (x) => x.toFixed(2));
  paintBars(s, canvases.scaled, r.scaled, (x) => x.toFixed(3));
  canvases.scaled.dataset.scaling = String(scaling);
  // + bias: the bias bars, with T5's bucket of each key after its number ("+1.25 b3").
  if (r.bias && canvases.bias) {
    const bias = r.bias;
    const bucket = r.bucket;
    paintBars(s, canvases.bias, bias, (x) => x.toFixed(2), bucket ? bucket.map((b) => `b${b}`) : undefined);
    Object.assign(canvases.bias.dataset, {
      bias: Array.from(bias, (x) => x.toFixed(6)).join(","),
      buckets: bucket ? bucket.join(",") : "",
    });
  }
  const best = strongestKey(r);
  paintSoftmax(s, canvases.softmax, best);
  paintSum(s, canvases.sum, best);
  return best;
}
