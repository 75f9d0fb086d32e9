// Selecting query tokens (a span, or any set) and reading their attention together, the same way in every view:
// the click rules (nextSpan; the head view's `selected` follows them too), Escape, the "mean | sum" menu and the
// clear button, the request for the combined row (computed in Python: attnwidgets/viewdata/selection.py span_row,
// so a long input's rows are read a block at a time) and drawing that row under a map. The heatmap, the model
// view and the profile sync `selection` (sorted query positions) and `combine` ("mean" | "sum") with Python.
//
// Click rules: a click selects a token alone (a click on the only selected token clears); shift-click selects the
// contiguous span from the anchor (the last token clicked without shift) to it; ctrl-click (cmd-click on a Mac)
// adds or removes one token and makes it the anchor. Escape clears; Shift+ArrowDown / Shift+ArrowUp grow or shrink
// the span from the keyboard (stepSpan).

import { decode, replyPacked } from "../shared/buffers";
import { h, listen, select } from "../shared/dom";
import type { Requester } from "../shared/requests";
import { visibleText } from "../shared/text";
import type { Theme } from "../shared/theme";
import { matrixCanvas } from "./canvas";
import type { ColorMapName } from "./colors";

/** The modifier keys of a click. */
export interface Mods {
  shiftKey: boolean;
  ctrlKey: boolean;
  metaKey: boolean;
}

/** A selection after a click, and the anchor the next shift-click extends from (null: none). */
export interface SpanPick {
  selection: number[];
  anchor: number | null;
}

/** The selection after clicking token `i` with `mods` (see the rules above); always sorted, no repeats. */
export function nextSpan(selected: number[], i: number, mods: Mods, anchor: number | null): SpanPick {
  if (mods.ctrlKey || mods.metaKey) {
    const on = selected.includes(i);
    const selection = on ? selected.filter((s) => s !== i) : [...selected, i].sort((a, b) => a - b);
    return { selection, anchor: on ? (selection[0] ?? null) : i };
  }
  if (mods.shiftKey) {
    const from = anchor ?? selected[0] ?? i;
    const [a, b] = from <= i ? [from, i] : [i, from];
    return { selection: Array.from({ length: b - a + 1 }, (_, j) => a + j), anchor: from };
  }
  if (selected.length === 1 && selected[0] === i) return { selection: [], anchor: null };
  return { selection: [i], anchor: i };
}

/** The selection after Shift+ArrowDown (step 1) or Shift+ArrowUp (-1) over `n` rows: the span from the anchor grows
 * or shrinks by one row at its far end; with nothing selected, the first (or last) row. */
export function stepSpan(selected: number[], anchor: number | null, step: number, n: number): SpanPick {
  if (n <= 0) return { selection: selected, anchor };
  if (!selected.length) {
    const i = step > 0 ? 0 : n - 1;
    return { selection: [i], anchor: i };
  }
  const from = anchor ?? selected[0];
  const far = from === selected[0] ? selected[selected.length - 1] : selected[0];
  const to = Math.max(0, Math.min(n - 1, far + step));
  return nextSpan(selected, to, { shiftKey: true, ctrlKey: false, metaKey: false }, from);
}

/** The query a view that steps through one query at a time shows for a selection (the QK step-through; the same rule
 * as attnwidgets/viewdata/selection.py one_query): `query` while it is selected or nothing is, else the first
 * selected token. */
export function oneQuery(selection: number[], query: number): number {
  return !selection.length || selection.includes(query) ? query : selection[0];
}

/** The selection after choosing `query` in a view that steps through one query: unchanged while it holds the query
 * (or is empty), else that query alone. */
export function selectQuery(selection: number[], query: number): number[] {
  return !selection.length || selection.includes(query) ? selection : [query];
}

/** The contiguous runs [start, stop) of a sorted selection. */
export function spanRuns(selection: number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const p of selection) {
    const last = out[out.length - 1];
    if (last && last[1] === p) last[1] = p + 1;
    else out.push([p, p + 1]);
  }
  return out;
}

/** A selection as runs "a:b,c:d": the page's cache key for it, and the profile's (AttentionProfile._key). */
export function selectionKey(selection: number[]): string {
  return spanRuns(selection)
    .map(([a, b]) => `${a}:${b}`)
    .join(",");
}

/** A caption for a selection, the same text as attnwidgets/viewdata/selection.py span_label (tokens as given:
 * pass them through userText for display). */
export function spanCaption(tokens: string[], selection: number[], combine: string, limit = 6): string {
  if (!selection.length) return "";
  const rows = selection.length === 1 ? "row" : "rows";
  return `${combine} of ${selection.length} ${rows}: ${spanTokens(tokens, selection, limit)}`;
}

/** The selected tokens (the first `limit`, then "…"): one span joined by spaces with its positions "(a–b)", several
 * joined by " · " (the tokens part of spanCaption). */
export function spanTokens(tokens: string[], selection: number[], limit = 6): string {
  const shown = selection.slice(0, limit).map((p) => tokens[p] ?? "?");
  const more = selection.length > limit ? " …" : "";
  if (spanRuns(selection).length !== 1) return `${shown.join(" · ")}${more}`;
  const where =
    selection.length > 1 ? ` (${selection[0]}–${selection[selection.length - 1]})` : ` (${selection[0]})`;
  return `${shown.join(" ")}${more}${where}`;
}

/** The part of a widget's model the span helpers use: the synced `selection` and `combine` traits. */
export interface SpanModel {
  get(key: "selection"): number[];
  get(key: "combine"): string;
  set(key: "selection", value: number[]): void;
  set(key: "combine", value: string): void;
  save_changes(): void;
}

/** Clicks and Escape on one view: keeps the anchor of shift-clicks between clicks. */
export class SpanSelector {
  anchor: number | null = null;
  constructor(private model: SpanModel) {}

  /** Apply a click on query token `i`. */
  click(i: number, mods: Mods): void {
    const pick = nextSpan(this.model.get("selection") ?? [], i, mods, this.anchor);
    this.anchor = pick.anchor;
    this.model.set("selection", pick.selection);
    this.model.save_changes();
  }

  /** Apply Shift+ArrowDown (1) or Shift+ArrowUp (-1) over `n` rows (stepSpan). */
  step(step: number, n: number): void {
    const pick = stepSpan(this.model.get("selection") ?? [], this.anchor, step, n);
    this.anchor = pick.anchor;
    this.model.set("selection", pick.selection);
    this.model.save_changes();
  }

  /** Select nothing (Escape, the clear button). */
  clear(): void {
    this.anchor = null;
    this.model.set("selection", []);
    this.model.save_changes();
  }

  /** The selection's keys on a map of `n` query rows: Shift+ArrowDown / Shift+ArrowUp grow or shrink the span,
   * Escape clears a selection. True when the key was one of them (the caller stops it there). */
  keydown(e: { key: string; shiftKey: boolean }, n: number): boolean {
    if (e.shiftKey && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      this.step(e.key === "ArrowDown" ? 1 : -1, n);
      return true;
    }
    if (e.key !== "Escape" || !(this.model.get("selection") ?? []).length) return false;
    this.clear();
    return true;
  }
}

/** The bar's span controls: the "mean | sum" menu and a clear button, disabled while nothing is selected. */
export function spanControls(
  model: SpanModel,
  selector: SpanSelector,
  controls: Array<() => void>,
): HTMLElement {
  const combine = select(
    [
      ["mean", "mean"],
      ["sum", "sum"],
    ],
    model.get("combine") || "mean",
    "combine selected rows",
  );
  combine.dataset.testid = "span-combine";
  const clear = h("button", {
    type: "button",
    text: "clear",
    "data-testid": "span-clear",
    title: "clear the selected tokens (Escape)",
    disabled: !(model.get("selection") ?? []).length,
  });
  controls.push(
    listen(combine, "change", () => {
      model.set("combine", combine.value);
      model.save_changes();
    }),
    listen(clear, "click", () => selector.clear()),
  );
  return h(
    "label",
    {
      className: "aw-span",
      title:
        "selected rows: click a token, shift-click to extend, ctrl/cmd-click to add or remove, Escape clears",
    },
    "selection",
    combine,
    clear,
  );
}

/** Where a combined row is drawn: a band `h` tall at y, columns k0 .. k0 + kn of the row across [x, x + w). */
export interface RowBand {
  x: number;
  y: number;
  w: number;
  h: number;
  k0: number;
  kn: number;
}

/** Height of the band for the combined row under a map of `cell`-sized cells, and the gap above it. */
export function spanBand(cell: number, t: Theme): { gap: number; height: number } {
  return { gap: Math.max(6, Math.round(t.font * 0.6)), height: Math.max(12, Math.min(28, Math.round(cell))) };
}

/** The height a combined row under a map of `cell`-sized cells adds to the canvas: its gap, its band, 4 px below. */
export function spanRoom(cell: number, t: Theme): number {
  const band = spanBand(cell, t);
  return band.gap + band.height + 4;
}

/** Colour-scale top of a combined row: the map's for a mean (it is a row like the ones above, on their scale),
 * its own largest value for a sum (which can pass 1). */
export function spanTop(row: Float32Array, combine: string, mapTop: number): number {
  if (combine !== "sum") return mapTop;
  let top = 0;
  for (const v of row) if (v > top) top = v;
  return top || 1;
}

/** The selection's combined row of the map on screen, asked of Python by a "span" request (viewdata/selection.py
 * span_row) once per key (the page's name for view, selection and combine); the heatmap and the model view draw it
 * under their map. */
export class SpanRowFetch {
  private row: { key: string; data: Float32Array } | null = null;

  /** The combined row named `key`, or null while it is not here. */
  get(key: string): Float32Array | null {
    return this.row && this.row.key === key ? this.row.data : null;
  }

  /** Fetch the row named `key()` with `request` (the view's fields; `what` is added), unless nothing is selected
   * or it is here already, then `paint`. A reply for a key no longer on screen is dropped; errors go to `showError`. */
  async fetch<T>(
    requester: Requester<T>,
    selected: boolean,
    key: () => string,
    request: Record<string, unknown>,
    paint: () => void,
    showError: (msg: string) => void,
  ): Promise<void> {
    const want = key();
    if (!selected || this.row?.key === want) {
      paint();
      return;
    }
    try {
      const reply = await requester.get(want, { what: "span", ...request });
      if (want !== key()) return; // moved on meanwhile
      this.row = { key: want, data: decode(replyPacked(reply.content, reply.buffers[0])).data };
      paint();
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }
}

/** Draw the combined row in `band`, framed in the accent colour, with its label left of it (right-aligned). */
export function drawSpanRow(
  ctx: CanvasRenderingContext2D,
  row: Float32Array,
  band: RowBand,
  vmax: number,
  map: ColorMapName,
  label: string,
  t: Theme,
): void {
  const img = matrixCanvas(row, 1, row.length, vmax, map);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(img, band.k0, 0, band.kn, 1, band.x, band.y, band.w, band.h);
  frameSpanRow(ctx, band, label, t);
}

/** The accent frame and the label left of a span's combined row (drawn over the row's pixels at `box`). */
export function frameSpanRow(
  ctx: CanvasRenderingContext2D,
  box: { x: number; y: number; w: number; h: number },
  label: string,
  t: Theme,
): void {
  ctx.strokeStyle = t.accent;
  ctx.lineWidth = t.name === "lecture" ? 3 : 2;
  ctx.strokeRect(box.x - 1, box.y - 1, box.w + 2, box.h + 2);
  ctx.font = `${t.font}px ${t.fontFamily}`;
  ctx.fillStyle = t.accent;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  ctx.fillText(label, box.x - 6, box.y + box.h / 2);
}

/** Outline each run of selected rows across a map in the theme's accent: row q spans [yOf(q), yOf(q) + rowH). */
export function outlineRows(
  ctx: CanvasRenderingContext2D,
  selection: number[],
  yOf: (q: number) => number,
  rowH: number,
  x: number,
  w: number,
  t: Theme,
): void {
  ctx.strokeStyle = t.accent;
  ctx.lineWidth = t.name === "lecture" ? 3 : 2;
  for (const [a, b] of spanRuns(selection)) ctx.strokeRect(x + 1, yOf(a) + 1, w - 2, (b - a) * rowH - 2);
}

/** The longest token strip drawn: past it, select from Python (`selection`) or in a linked heatmap. */
export const STRIP_MAX = 1024;

/** A strip of token chips that selects with the click rules above (test id `token-strip`, a chip per token with
 * `data-pos`); a drag over chips selects the span it covers. `update(tokens)` rebuilds it when the tokens change and
 * marks the selected chips; its listeners go to `cleanups`. Views whose own picture has no token rows (the per-head
 * statistic widgets) select with it. */
export function tokenStrip(
  model: SpanModel,
  picker: SpanSelector,
  cleanups: Array<() => void>,
): { el: HTMLElement; update(tokens: string[]): void } {
  const el = h("div", {
    className: "aw-token-strip",
    "data-testid": "token-strip",
    title:
      "select query tokens: click, shift-click or drag to extend, ctrl/cmd-click to add or remove, Escape clears",
  });
  el.style.cssText = "line-height: 1.9; margin: 6px 0; max-width: 100%; user-select: none;";
  let shown = "";
  let chips: HTMLSpanElement[] = [];
  let dragFrom: number | null = null;
  const posOf = (e: Event) => {
    const pos = (e.target as HTMLElement).closest?.("[data-pos]")?.getAttribute("data-pos");
    return pos === null || pos === undefined ? null : Number(pos);
  };
  cleanups.push(
    listen(el, "mousedown", (e: MouseEvent) => {
      const i = posOf(e);
      if (i === null) return;
      e.preventDefault();
      picker.click(i, e);
      dragFrom = e.shiftKey || e.ctrlKey || e.metaKey ? null : i;
    }),
    listen(el, "mouseover", (e: MouseEvent) => {
      const i = posOf(e);
      if (dragFrom === null || i === null || !(e.buttons & 1)) return;
      const sel = model.get("selection") ?? [];
      if (sel.length === Math.abs(i - dragFrom) + 1 && sel[0] === Math.min(i, dragFrom)) return;
      picker.anchor = dragFrom;
      picker.click(i, { shiftKey: true, ctrlKey: false, metaKey: false });
    }),
    listen(window, "mouseup", () => {
      dragFrom = null;
    }),
  );
  function update(tokens: string[]): void {
    const key = tokens.join("\u0000");
    if (key !== shown) {
      shown = key;
      chips = [];
      el.replaceChildren();
      if (tokens.length > STRIP_MAX) {
        el.append(h("span", { className: "aw-muted", text: `${tokens.length} tokens: select from Python` }));
      } else {
        const frag = document.createDocumentFragment();
        tokens.forEach((t, i) => {
          const chip = h("span", { text: visibleText(t), "data-pos": i });
          chip.style.cssText = "padding: 1px 3px; margin-right: 2px; border-radius: 3px; cursor: pointer;";
          chips.push(chip);
          frag.append(chip);
        });
        el.append(frag);
      }
    }
    const picked = new Set(model.get("selection") ?? []);
    chips.forEach((chip, i) => {
      const on = picked.has(i);
      chip.style.boxShadow = on ? "inset 0 -4px 0 var(--aw-accent)" : "";
      chip.style.fontWeight = on ? "700" : "";
      chip.classList.toggle("aw-sel", on);
    });
    el.dataset.selection = [...picked].sort((a, b) => a - b).join(",");
    el.style.display = tokens.length ? "" : "none";
  }
  return { el, update };
}
