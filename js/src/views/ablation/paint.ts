// AblationWidget's drawing: the grid's buttons restyled in place, the watched numbers before/after as bars, and
// the selected head's map before/after on one colour scale (state.ts says what; this draws it).

import { drawLabels, drawMatrix, labelRoom, prepareCanvas, textMeasurer } from "../../draw/canvas";
import type { ColorMapName } from "../../draw/colors";
import { fitZoom } from "../../draw/fit_views";
import { heatmapLayout } from "../../draw/layout";
import { drawSpanRow, outlineRows, spanBand, spanRoom } from "../../draw/span";
import { decode, maxOf } from "../../shared/buffers";
import { h } from "../../shared/dom";
import { userText } from "../../shared/text";
import type { Theme } from "../../shared/theme";
import {
  type AblationDict,
  type OutputRow,
  type Payload,
  ablationColours,
  barSpan,
  canonical,
  cellLook,
  deltaAxisText,
  deltaClass,
  deltaRanges,
  deltaSpan,
  formatDelta,
  formatValue,
  headState,
  layerLook,
  mapTitleText,
  movedText,
  outputRanges,
  sliderValue,
  spanCompare,
} from "./state";

/** The ablation colours on the root: the theme's grid lines, the rest by theme (state.ts ablationColours). */
export function paintColours(root: HTMLElement, t: Theme): void {
  const colours = { ...ablationColours(t.name === "lecture"), "--aw-abl-line": t.grid };
  for (const [name, value] of Object.entries(colours)) root.style.setProperty(name, value);
}

/** Restyle the layer buttons and head cells of `stack` for ablation `want` (the selected head outlined). */
export function paintGrid(
  layerButtons: HTMLButtonElement[],
  cells: HTMLButtonElement[][],
  want: AblationDict,
  stack: string,
  mode: string,
  selected: { layer: number; head: number },
): void {
  cells.forEach((row, l) => {
    const lb = layerButtons[l];
    const off = headState(want, stack, l, 0).layerOff;
    const look = layerLook(off, l, mode);
    lb.textContent = look.text;
    lb.setAttribute("aria-pressed", String(off));
    lb.title = look.title;
    row.forEach((c, hd) => {
      const s = cellLook(headState(want, stack, l, hd), l, hd, c.dataset.kv);
      c.style.background = s.background;
      c.textContent = s.text;
      c.disabled = s.disabled;
      c.classList.toggle("aw-selected", l === selected.layer && hd === selected.head);
      c.dataset.state = s.state;
      c.setAttribute("aria-pressed", String(s.pressed));
      c.setAttribute("aria-label", `layer ${l} head ${hd}`);
      c.title = s.title;
    });
  });
}

/** The change of one watched number on its change axis (half-width `range`): a bar from the centre line. */
function deltaTrack(r: OutputRow, range: number): HTMLElement {
  const track = h("div", { className: "aw-abl-track aw-abl-dtrack", "data-testid": "out-delta-track" });
  track.append(h("div", { className: "aw-abl-zero", style: "left: 50%" }));
  const span = deltaSpan(r.delta, range);
  if (span.width > 0)
    track.append(
      h("div", {
        className: `aw-abl-bar aw-abl-dbar ${deltaClass(r.delta)}`,
        style: `left: ${span.left * 100}%; width: ${span.width * 100}%`,
      }),
    );
  track.dataset.share = String(span.width * 2 * Math.sign(r.delta ?? 0));
  return track;
}

/** One watched number: its name, before (grey) and after (colour) bars on a track over [lo, hi], its change on the
 * change axis, the numbers (the change in large type). */
function outputRow(r: OutputRow, lo: number, hi: number, range: number): HTMLElement {
  const track = h("div", { className: "aw-abl-track" });
  if (lo < 0)
    track.append(h("div", { className: "aw-abl-zero", style: `left: ${(-lo / (hi - lo)) * 100}%` }));
  for (const [cls, v] of [
    ["aw-before", r.before],
    ["aw-after", r.after],
  ] as const) {
    if (v === null) continue;
    const span = barSpan(v, lo, hi);
    track.append(
      h("div", {
        className: `aw-abl-bar ${cls}`,
        style: `left: ${span.left * 100}%; width: ${Math.max(span.width * 100, 0.4)}%`,
      }),
    );
  }
  const nums = h(
    "span",
    { className: "aw-abl-nums" },
    h("span", { text: formatValue(r.before), "data-testid": "out-before" }),
    " → ",
    h("span", { text: formatValue(r.after), "data-testid": "out-after" }),
  );
  const delta = h("span", {
    text: formatDelta(r.delta),
    "data-testid": "out-delta",
    className: `aw-abl-delta ${deltaClass(r.delta)}`,
  });
  const row = h(
    "div",
    { className: "aw-abl-row", "data-testid": "out-row" },
    h("span", { text: userText(r.name) }),
    track,
    deltaTrack(r, range),
    h("span", {}, nums, delta),
  );
  Object.assign(row.dataset, {
    item: r.item,
    name: r.name,
    before: String(r.before),
    after: String(r.after),
  });
  return row;
}

/** The output panel: a heading per item, a row per watched number; the answered seq and ablation for tests. */
export function paintOutput(output: HTMLElement, out: Payload): void {
  output.replaceChildren();
  if (!out || !out.rows) return;
  const ranges = outputRanges(out.rows);
  const changes = deltaRanges(out.rows);
  // The axes' heads: the value's own axis, and the change's, zoomed to the largest change of the watched numbers.
  const widest = Math.max(0, ...changes.values());
  output.append(
    h(
      "div",
      { className: "aw-abl-row aw-abl-axes aw-muted" },
      h("span"),
      h("span", { text: "value: before / after" }),
      h("span", { text: deltaAxisText(widest), "data-testid": "delta-axis" }),
      h("span"),
    ),
  );
  let group = "";
  for (const r of out.rows) {
    if (r.item !== group) {
      group = r.item;
      const text = userText(r.label || r.item);
      output.append(h("div", { className: "aw-abl-group", text, title: text }));
    }
    const [lo, hi] = ranges.get(r.name) ?? [0, 1];
    output.append(outputRow(r, lo, hi, widest));
  }
  output.dataset.seq = String(out.seq);
  output.dataset.ablation = JSON.stringify(canonical(out.ablation ?? { edits: [] }));
}

/** The selected head's map before and after, on one colour scale; returns the caption. */
export function paintMaps(
  canvases: [HTMLCanvasElement, HTMLCanvasElement],
  hm: Payload["map"],
  t: Theme,
  colormap: ColorMapName,
  fitted: boolean,
  where: { stack: string; layer: number; head: number },
  span: { selection: number[]; combine: string } = { selection: [], combine: "mean" },
): string {
  const before = decode(hm.before);
  const after = decode(hm.after);
  const vmax = Math.max(maxOf(before.data), maxOf(after.data)) || 1;
  const [nq, nk] = before.shape;
  const probe = textMeasurer();
  // lecture: labels at least 14 px (the room reads them), light: a little under the view's font
  const small = { ...t, font: t.name === "lecture" ? Math.max(14, t.font - 4) : Math.max(9, t.font - 2) };
  const l = heatmapLayout({
    nq,
    nk,
    // fitted, the grid and the maps stand side by side (CSS above), so the maps are small enough to sit in a row
    // beside the head grid: the explorer then needs little or no zoom, and its text stays projector-sized
    // fitted, the maps sit in a row under the watched numbers; at 220 px a room still sees the pattern (140 px
    // maps with 8 px labels did not)
    maxGrid: fitted ? 220 : t.name === "lecture" ? 340 : 240,
    maxCell: fitted ? 22 : t.name === "lecture" ? 26 : 18,
    labelWidth: labelRoom(probe, hm.queries, small, 90),
    labelHeight: labelRoom(probe, hm.keys, small, 90),
    minLabelCell: 8,
  });
  // the selected rows (clamped to this text's queries): outlined, their combine before / after under each map
  const sel = span.selection.filter((q) => q < nq);
  const cmp = spanCompare(before.data, after.data, nk, sel, span.combine);
  const band = spanBand(l.cell, t);
  const height = l.height + (sel.length ? spanRoom(l.cell, t) : 0);
  const top = span.combine === "sum" ? Math.max(maxOf(cmp.before), maxOf(cmp.after)) || 1 : vmax;
  for (const [canvas, m, row] of [
    [canvases[0], before, cmp.before],
    [canvases[1], after, cmp.after],
  ] as const) {
    const ctx = prepareCanvas(canvas, l.width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, l.width, height);
    drawMatrix(ctx, m.data, nq, nk, l.x0, l.y0, l.cell * nk, l.cell * nq, vmax, colormap);
    drawLabels(ctx, l, hm.queries, hm.keys, small);
    if (sel.length) {
      outlineRows(ctx, sel, (q) => l.y0 + q * l.cell, l.cell, l.x0, l.cell * nk, t);
      const y = l.y0 + l.cell * nq + band.gap;
      const box = { x: l.x0, y, w: l.cell * nk, h: band.height, k0: 0, kn: nk };
      drawSpanRow(ctx, row, box, top, colormap, span.combine, { ...t, font: small.font });
    }
    Object.assign(canvas.dataset, {
      key: hm.key,
      max: String(maxOf(m.data)),
      sum: String(m.data.reduce((a, b) => a + b, 0)),
      x0: String(l.x0),
      y0: String(l.y0),
      cell: String(l.cell),
      selection: sel.join(","),
      span: Array.from(row, (v) => v.toFixed(6)).join(","),
      moved: sel.length ? cmp.moved.toFixed(6) : "",
    });
  }
  return (
    mapTitleText(where.stack, where.layer, where.head, vmax) +
    movedText(hm.queries.map(userText), sel, cmp.moved)
  );
}

/** Fit to screen: the explorer is many HTML parts (head buttons, rows, two maps) that do not size themselves, so a
 * fitted explorer is zoomed as a whole (never below fitZoom's minimum) to lie inside `box`, legend included. */
export function zoomToFit(
  root: HTMLElement,
  box: { width: number; height: number } | null,
  lecture = false,
): void {
  root.style.zoom = "";
  // In the lecture theme the explorer is never zoomed out (its text would go under the room's 14 px): it wraps to
  // the width instead, and the notebook scrolls.
  const z =
    box && !lecture
      ? fitZoom(root.getBoundingClientRect(), { width: box.width - 12, height: box.height })
      : 1;
  root.style.zoom = z < 1 ? String(z) : "";
  root.dataset.zoom = String(z);
}

/** The selected head's line under the grid: its name, and the slider at its scale (unless being dragged). */
export function paintSelection(
  parts: { selectedText: HTMLElement; slider: HTMLInputElement; text: HTMLElement },
  want: AblationDict,
  at: { stack: string; layer: number; head: number },
): void {
  const { selectedText, slider, text } = parts;
  selectedText.textContent = `layer ${at.layer} · head ${at.head}`;
  const v = sliderValue(want, at.stack, at.layer, at.head);
  if (document.activeElement !== slider) slider.value = String(v);
  text.textContent = `×${Number(slider.value).toFixed(2)}`;
  slider.disabled = headState(want, at.stack, at.layer, at.head).layerOff;
}
