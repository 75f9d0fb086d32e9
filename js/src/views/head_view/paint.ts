// HeadView's drawing: the lines (drawn into pixels, draw/line_raster.ts), the token columns, the window's
// positions or a sentence pair's segment marks (state.ts says what and where; this draws it).

import { fitToken, labelRoom, prepareCanvas, textMeasurer } from "../../draw/canvas";
import { categorical, hexToRgb, readableOn } from "../../draw/colors";
import { LineRaster } from "../../draw/line_raster";
import { type LineRows, forEachLine } from "../../shared/lines";
import type { Theme } from "../../shared/theme";
import {
  type Columns,
  type Geo,
  type Hit,
  type WindowInfo,
  keeps,
  keyKept,
  keyY,
  layout,
  lineThreshold,
  queriesDrawn,
  queryKept,
  rowPlan,
  rowY,
  segmentRuns,
  selectedRows,
} from "./state";

const STEPS = 16; // opacity steps per head (a line's opacity is its step's)

/** What one paint draws. */
export interface Scene {
  t: Theme;
  cols: Columns;
  rows: LineRows | null; // the layer's lines (null before the first arrives)
  win: WindowInfo | null;
  heads: number[];
  filter: string;
  selected: number[];
  hover: Hit | null;
  minWeight: number;
}

/** What was drawn: where, and how many lines (all, and by query/key segment: AA, AB, BA, BB). */
export interface Drawn {
  geo: Geo;
  drawn: number;
  counts: number[];
  nq: number;
  nk: number;
}

/** Where everything goes for scene `s`, the labels measured, fitted to `room` when given. */
export function sceneLayout(s: Scene, room: { width: number; height: number } | null): Geo {
  const [queries, keys] = s.cols.tokens;
  const [qseg, kseg] = s.cols.segments;
  const probe = textMeasurer();
  const { n } = rowPlan(queries.length, keys.length, s.win);
  // A window labels each token with its position too (muted, outside the token column); a sentence pair marks
  // its segments there instead: "A" / "B" and a bar along each segment's rows, on both columns.
  const pair = !s.win && (qseg.includes(1) || kseg.includes(1));
  return layout(
    s.t,
    n,
    labelRoom(probe, queries, s.t, 180),
    labelRoom(probe, keys, s.t, 180),
    { win: s.win, pair },
    room,
  );
}

/** The lines, one opacity step per 1/16 of weight, drawn by hand into the canvas's pixels between the columns
 * (draw/line_raster.ts: Chromium's canvas took 0.8 s to rasterise them at 128 tokens); counts every line kept by
 * min_weight per segment pair. */
function paintLines(
  ctx: CanvasRenderingContext2D,
  s: Scene,
  g: Geo,
  rows: LineRows,
): { drawn: number; counts: number[] } {
  const [qseg, kseg] = s.cols.segments;
  const nq = s.cols.tokens[0].length;
  const { nWin, gap, n } = rowPlan(nq, s.cols.tokens[1].length, s.win);
  const selRows = selectedRows(s.selected, s.win ? s.win.q[0] : 0, nq);
  const thr = lineThreshold(n, s.minWeight, s.hover !== null || selRows.length > 0);
  const qList = queriesDrawn(s.hover, selRows, rows.nq);
  const kOnly = s.hover?.side === "k" ? s.hover.i : -1;
  // The region between the columns, in device pixels (the canvas is scaled by its pixel ratio), with a margin of
  // 4 px either side so that no line's width leaves it (a line that does takes the raster's slower, clipped path).
  const dpr = ctx.getTransform().a || 1;
  const half = ((g.rowH >= 10 ? 2 : 1) * dpr) / 2;
  const x0 = Math.max(0, Math.floor((g.xl + 6) * dpr) - 4);
  const x1 = (g.xl + 6) * dpr - x0;
  const x2 = (g.xr - 6) * dpr - x0;
  const width = Math.min(ctx.canvas.width - x0, Math.ceil(x2) + 4);
  const height = ctx.canvas.height;
  let drawn = 0;
  const counts = [0, 0, 0, 0]; // by (query segment, key segment): AA, AB, BA, BB
  if (width <= 0 || height <= 0) return { drawn, counts };
  // The background (opaque, as paintScene filled it): built from the theme's "#rrggbb" rather than read back from
  // the canvas (repeated read-backs make Chromium warn and move the canvas off the GPU); read back for other colours.
  let img: ImageData;
  if (/^#[0-9a-f]{6}$/i.test(s.t.bg)) {
    img = new ImageData(width, height);
    const [br, bg, bb] = hexToRgb(s.t.bg);
    new Uint32Array(img.data.buffer).fill(
      new Uint32Array(new Uint8ClampedArray([br, bg, bb, 255]).buffer)[0],
    );
  } else {
    img = ctx.getImageData(x0, 0, width, height);
  }
  const raster = new LineRaster(width, height);
  for (const hd of s.heads) {
    if (hd >= rows.heads) continue;
    forEachLine(rows, hd, qList, kOnly, thr, (q, k, w) => {
      const qs = qseg[q] ?? 0;
      const ks = kseg[k] ?? 0;
      counts[qs * 2 + ks]++;
      if (!keeps(s.filter, qs, ks)) return;
      const step = Math.min(STEPS - 1, Math.floor(Math.min(1, w) * STEPS));
      raster.line(
        x1,
        rowY(g, q) * dpr,
        x2,
        keyY(g, k, nWin, gap) * dpr,
        half,
        Math.max(0.06, (step + 1) / STEPS),
      );
      drawn++;
    });
    // One head alone: its colour darkened to 4.5 : 1 on the background (a pale yellow or sky-blue head
    // drawn at opacity = weight vanished on a projector); several keep their hues apart.
    raster.composite(
      img.data,
      hexToRgb(s.heads.length === 1 ? readableOn(categorical(hd), s.t.bg) : categorical(hd)),
    );
  }
  ctx.putImageData(img, x0, 0);
  return { drawn, counts };
}

/** A shaded band behind row y. */
function mark(ctx: CanvasRenderingContext2D, g: Geo, x: number, y: number, w: number, colour: string): void {
  ctx.fillStyle = colour;
  ctx.fillRect(x, y - g.rowH / 2 + 1, w, g.rowH - 2);
}

/** The query column (left): hovered or selected rows marked, those outside the filter greyed, window positions. */
function paintQueries(ctx: CanvasRenderingContext2D, s: Scene, g: Geo): void {
  const { t, win } = s;
  const queries = s.cols.tokens[0];
  const qseg = s.cols.segments[0];
  const q0 = win ? win.q[0] : 0;
  const sel = new Set(selectedRows(s.selected, q0, queries.length));
  for (let i = 0; i < queries.length; i++) {
    const hot = (s.hover?.side === "q" && s.hover.i === i) || sel.has(i);
    if (hot) mark(ctx, g, 2, rowY(g, i), g.xl - 2, sel.has(i) ? "rgba(209,36,47,0.16)" : "rgba(0,0,0,0.08)");
    ctx.textAlign = "right";
    ctx.fillStyle = hot ? t.accent : queryKept(s.filter, qseg[i] ?? 0) ? t.fg : "#b8bec6";
    ctx.fillText(fitToken(ctx, queries[i] ?? "", g.xl - g.posW - 4, 20), g.xl, rowY(g, i));
    if (g.posW && win) {
      ctx.textAlign = "left";
      ctx.fillStyle = t.muted;
      ctx.fillText(String(q0 + i), 2, rowY(g, i));
    }
  }
}

/** The key column (right): the hovered key marked, far keys muted below a "far keys:" row, window positions. */
function paintKeys(ctx: CanvasRenderingContext2D, s: Scene, g: Geo, wr: number): void {
  const { t, win } = s;
  const [queries, keys] = s.cols.tokens;
  const kseg = s.cols.segments[1];
  const { nWin, gap } = rowPlan(queries.length, keys.length, win);
  for (let j = 0; j < keys.length; j++) {
    const y = keyY(g, j, nWin, gap);
    const hot = s.hover?.side === "k" && s.hover.i === j;
    if (hot) mark(ctx, g, g.xr - 2, y, wr, "rgba(0,0,0,0.08)");
    ctx.textAlign = "left";
    ctx.fillStyle = hot ? t.accent : j >= nWin ? t.muted : keyKept(s.filter, kseg[j] ?? 0) ? t.fg : "#b8bec6";
    ctx.fillText(fitToken(ctx, keys[j] ?? "", wr, 24), g.xr, y);
    if (g.posW && win && j < nWin) {
      ctx.fillStyle = t.muted;
      ctx.fillText(String(win.k[0] + j), g.xr + wr + 8, y);
    }
  }
  if (gap) {
    ctx.fillStyle = t.muted;
    ctx.textAlign = "left";
    ctx.fillText("far keys:", g.xr, rowY(g, nWin));
  }
}

/** A sentence pair's "A" / "B" and a bar along each segment's rows, at x. */
function paintSegments(
  ctx: CanvasRenderingContext2D,
  s: Scene,
  g: Geo,
  seg: number[],
  x: number,
  y: (i: number) => number,
): void {
  for (const [i, end, which] of segmentRuns(seg)) {
    ctx.fillStyle = s.t.muted;
    ctx.fillRect(x + g.posW - 8, y(i) - g.rowH / 2 + 2, 3, y(end) - y(i) + g.rowH - 4);
    ctx.fillStyle = s.t.fg;
    ctx.textAlign = "left";
    ctx.fillText(which ? "B" : "A", x, y(i));
  }
}

/** Paint scene `s` on `canvas` laid out as `g`: lines, then tokens (text drawn as pixels, never markup). */
export function paintScene(canvas: HTMLCanvasElement, s: Scene, g: Geo): Drawn {
  const { t, win } = s;
  const [queries, keys] = s.cols.tokens;
  const [qseg, kseg] = s.cols.segments;
  const nq = queries.length;
  const nk = keys.length;
  const ctx = prepareCanvas(canvas, g.width, g.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, g.width, g.height);
  const lines = s.rows ? paintLines(ctx, s, g, s.rows) : { drawn: 0, counts: [0, 0, 0, 0] };
  ctx.font = `${Math.min(t.font, g.rowH - 2)}px ${t.fontFamily}`;
  ctx.textBaseline = "middle";
  if (g.rowH >= 7) {
    const wr = g.wr;
    paintQueries(ctx, s, g);
    paintKeys(ctx, s, g, wr);
    if (g.pair) {
      const { nWin, gap } = rowPlan(nq, nk, win);
      paintSegments(ctx, s, g, qseg.slice(0, nq), 2, (i) => rowY(g, i));
      paintSegments(ctx, s, g, kseg.slice(0, nk), g.xr + wr + 4, (j) => keyY(g, j, nWin, gap));
    }
  }
  return { geo: g, ...lines, nq, nk };
}
