// FillMask's drawing: the fillers' bars, one panel per [MASK], and the attention row of the chosen [MASK] over the
// tokens (state.ts says what).

import { fitToken, prepareCanvas, textMeasurer } from "../../draw/canvas";
import { categorical } from "../../draw/colors";
import type { Theme } from "../../shared/theme";
import {
  type Fill,
  type FillMaskTraits,
  type FillsLayout,
  type RowLabels,
  fillsLayout,
  labelHeight,
  labelLine,
  labelReach,
  namedColumns,
  rowColumns,
} from "./state";

/** The filler bars of one [MASK] `m` in the panel at (x0, y0). */
function drawPanel(
  ctx: CanvasRenderingContext2D,
  l: FillsLayout,
  t: Theme,
  f: Fill,
  at: { m: number; x0: number; y0: number; position: number; selected: boolean },
): void {
  const font = `${t.font}px ${t.fontFamily}`;
  const { lineH, labelW, barMax, pMax } = l;
  const { x0, y0 } = at;
  ctx.fillStyle = at.selected ? t.accent : t.fg;
  ctx.textAlign = "left";
  ctx.font = `bold ${font}`;
  ctx.fillText(`[MASK] #${at.m + 1} (token ${at.position})`, x0 + 4, y0 + lineH / 2);
  ctx.font = font;
  f.tokens.forEach((tok, r) => {
    const y = y0 + lineH * (r + 1);
    const pr = f.probs[r];
    ctx.fillStyle = t.fg;
    ctx.textAlign = "right";
    ctx.fillText(fitToken(ctx, tok, labelW - 10), x0 + labelW - 6, y + lineH / 2);
    // the whole 0–100 % track, faint, so a short bar reads as a small probability
    ctx.fillStyle = t.muted;
    ctx.globalAlpha = 0.18;
    ctx.fillRect(x0 + labelW, y + lineH * 0.15, barMax, lineH * 0.7);
    ctx.globalAlpha = 1;
    ctx.fillStyle = categorical(at.m);
    ctx.fillRect(x0 + labelW, y + lineH * 0.15, Math.max(1, (barMax * pr) / pMax), lineH * 0.7);
    ctx.fillStyle = t.fg;
    ctx.textAlign = "left";
    ctx.fillText(`${(100 * pr).toFixed(1)} %`, x0 + labelW + (barMax * pr) / pMax + 6, y + lineH / 2);
  });
}

/** Paint the fillers' panels `room` px wide at most; returns their layout (a click picks a panel's [MASK]). */
export function paintFills(
  canvas: HTMLCanvasElement,
  p: FillMaskTraits["_payload"],
  selected: number,
  t: Theme,
  room: number,
): FillsLayout {
  const fills = p.fills ?? [];
  const probe = textMeasurer();
  const font = `${t.font}px ${t.fontFamily}`;
  probe.font = font;
  const l = fillsLayout(fills, room, t.font, Math.round(probe.measureText("100.0 %").width) + 8);
  const ctx = prepareCanvas(canvas, l.w * l.perRow, l.h * l.nRows);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, l.w * l.perRow, l.h * l.nRows);
  ctx.font = font;
  ctx.textBaseline = "middle";
  fills.forEach((f, m) => {
    const at = { m, x0: (m % l.perRow) * l.w, y0: Math.floor(m / l.perRow) * l.h };
    drawPanel(ctx, l, t, f, { ...at, position: p.positions[m], selected: m === selected });
  });
  Object.assign(canvas.dataset, {
    nMasks: String(fills.length),
    top: fills.map((f) => f.tokens[0] ?? "").join("\u241f"),
    nBars: String(fills.reduce((a, f) => a + f.tokens.length, 0)),
    // what the bars say, per [MASK]: its words and probabilities as drawn (for tests and screen readers)
    words: JSON.stringify(fills.map((f) => f.tokens)),
    probs: JSON.stringify(fills.map((f) => f.probs)),
    selected: String(selected),
    pMax: String(l.pMax),
    perRow: String(l.perRow),
    panelW: String(l.w),
    panelH: String(l.h),
  });
  return l;
}

/** The attention row's label of token `tok` at x = `cx` (its column's centre) under the axis at `y`; `line` of a
 * staggered row (a short tick from the axis leads a second line's label to its column). */
function drawLabel(
  ctx: CanvasRenderingContext2D,
  tok: string,
  at: { cx: number; y: number; line: number; labels: RowLabels; font: number },
): void {
  const { cx, y, line, labels, font } = at;
  ctx.save();
  ctx.translate(cx, y);
  if (labels.lines === 0) {
    // turned: read upwards, ending at the axis, centred on the column
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
  } else {
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    if (line > 0) {
      const strokeStyle = ctx.strokeStyle;
      ctx.strokeStyle = ctx.fillStyle;
      ctx.globalAlpha = 0.4;
      ctx.beginPath();
      ctx.moveTo(0.5, -4);
      ctx.lineTo(0.5, line * labelLine(font) - 2);
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = strokeStyle;
    }
    ctx.translate(0, line * labelLine(font));
  }
  ctx.fillText(fitToken(ctx, tok, labels.room, 12), 0, 0);
  ctx.restore();
}

/** Each token label's width (px) as the row draws it (bold when `marked`), for the row's label plan. */
function labelWidths(tokens: string[], marked: Set<number>, t: Theme): number[] {
  const probe = textMeasurer();
  return tokens.map((tok, j) => {
    probe.font = `${marked.has(j) ? "700 " : ""}${t.font}px ${t.fontFamily}`;
    return probe.measureText(fitToken(probe, tok, t.font * 6, 12)).width;
  });
}

/** Paint the attention row `values` over the tokens, the `picked` query tokens marked; returns its columns (for the
 * tooltip and clicks). Its labels never overlap (state.ts rowColumns: level, staggered over two lines, or turned and
 * thinned). */
export function paintRow(
  canvas: HTMLCanvasElement,
  p: FillMaskTraits["_payload"],
  values: Float32Array,
  picked: number[],
  t: Theme,
  room: number,
): { x0: number; colW: number } {
  const tokens = p.tokens ?? [];
  const n = tokens.length;
  const marked = new Set(picked); // the selected query tokens (bars and labels in the accent)
  const { x0, colW, labels } = rowColumns(n, room, t.font, labelWidths(tokens, marked, t));
  const plotH = Math.round(t.font * 5);
  const labelH = labelHeight(labels, t.font);
  const width = x0 + colW * n + labelReach(labels, colW) + 8;
  const height = t.font + plotH + labelH;
  const ctx = prepareCanvas(canvas, width, height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, width, height);
  ctx.font = `${t.font}px ${t.fontFamily}`;
  let vmax = 0;
  for (const v of values) if (v > vmax) vmax = v;
  const top = Math.max(vmax, 1e-6);
  const y0 = t.font;
  ctx.fillStyle = t.muted;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  ctx.fillText(top.toFixed(2), x0 - 4, y0);
  ctx.fillText("0", x0 - 4, y0 + plotH);
  const masks = new Set(p.positions ?? []);
  const named = labels.lines ? null : namedColumns(n, labels.every, picked);
  ctx.lineWidth = 1;
  for (let j = 0; j < n; j++) {
    const x = x0 + j * colW;
    const bh = (plotH * values[j]) / top;
    ctx.fillStyle = marked.has(j) ? t.accent : masks.has(j) ? t.muted : categorical(0);
    ctx.fillRect(x + 2, y0 + plotH - bh, colW - 4, bh);
    if (named && !named[j]) continue;
    ctx.fillStyle = marked.has(j) ? t.accent : t.fg;
    ctx.font = `${marked.has(j) ? "700 " : ""}${t.font}px ${t.fontFamily}`;
    const line = labels.lines > 1 ? j % labels.lines : 0;
    drawLabel(ctx, tokens[j], { cx: x + colW / 2, y: y0 + plotH + 8, line, labels, font: t.font });
  }
  ctx.strokeStyle = t.fg;
  ctx.beginPath();
  ctx.moveTo(x0, y0 + plotH + 0.5);
  ctx.lineTo(x0 + colW * n, y0 + plotH + 0.5);
  ctx.stroke();
  Object.assign(canvas.dataset, {
    n: String(n),
    x0: String(x0),
    colW: String(colW),
    labelLines: String(labels.lines), // 1 level, 2 staggered, 0 turned (every `labelEvery`-th named)
    labelEvery: String(labels.every),
    max: String(vmax),
    selection: picked.join(","),
    values: Array.from(values, (v) => v.toFixed(6)).join(","),
  });
  return { x0, colW };
}
