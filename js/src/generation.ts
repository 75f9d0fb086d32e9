// GenerationView: a model's attention while it writes. Mirrors attnwidgets/widgets/generation.py.
// The prompt and the generated text, each key token's background the weight the current step's query gives it; a
// steps x keys heatmap (current step outlined); the step's top-k predictions. A slider, the arrow keys and a play
// button move the synced `step`. Only the first (kind, layer, head) arrives with the widget; others by request.
// Tokens of the prompt (an encoder-decoder's source) are selected with the heatmap's clicks (shared/span.ts: click,
// shift-click, ctrl/cmd-click, Escape; a drag over tokens selects the span it covers), synced as `selection` and
// `combine`; the span is underlined on the text and a panel draws, per step, the share of that step's attention
// on it (computed in Python: `_share`, viewdata/selection.py selection_share), a line per layer or head. A click
// on the panel moves the scrubber to that step.

import { type Matrix, decode, replyPacked } from "./shared/buffers";
import type { Packed } from "./shared/buffers";
import { type ColorMapName, categorical, readableOn, rgbAt } from "./shared/colors";
import { h, listen, resetControls, select } from "./shared/dom";
import { drawMatrix, fitToken, prepareCanvas } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { fmt, headLabel, roomFor, textOn } from "./shared/heads";
import { type RenderProps, onModel, saveTraits } from "./shared/model";
import { Requester } from "./shared/requests";
import { typedInControl } from "./shared/selection";
import * as span from "./shared/span";
import { tokenLabel, userText, visibleText } from "./shared/text";
import { type Theme, applyTheme, theme } from "./shared/theme";
import { scrolledCanvas, widgetShell } from "./shared/widget_shell";

/** Python traits of GenerationView. */
export interface GenerationTraits {
  step: number;
  layer: number;
  head: number;
  kind: string;
  colormap: string;
  theme: string;
  fit: "auto" | boolean | number[]; // shared/fit.ts
  selection: number[]; // selected tokens: positions of the fed tokens (a decoder) or the source, [] none
  combine: string; // "sum" (share of each step's attention on the selection) | "mean" (per selected token)
  share_by: string; // "layer" | "head": the panel's lines
  _share: { key?: string; lines?: Packed; labels?: string[]; error?: string };
  _error: string;
  _meta: {
    title: string;
    kinds: string[];
    shapes: Record<string, [number, number]>;
    prompt: string[];
    generated: string[];
    keys: Record<string, string[]>;
    first_row: number;
    encoder_decoder: boolean;
    topk_tokens: string[][];
    text: string;
    n_selectable: number;
  };
  _payload: { key: string; matrix: Packed; topk_probs: Packed };
}

/** Where key `k` of `kind` sits in the text lines: [line, index] (line 0 the prompt/source, 1 the output). */
export function keySpan(kind: string, encDec: boolean, nPrompt: number, k: number): [number, number] {
  if (encDec) return kind === "cross" ? [0, k] : [1, k];
  return k < nPrompt ? [0, k] : [1, k - nPrompt];
}

/** The step after a key press (null: not a step key). */
export function stepKey(key: string, step: number, n: number): number | null {
  if (key === "ArrowRight" || key === "ArrowDown") return Math.min(n - 1, step + 1);
  if (key === "ArrowLeft" || key === "ArrowUp") return Math.max(0, step - 1);
  if (key === "Home") return 0;
  if (key === "End") return n - 1;
  return null;
}

/** Width kept beside the map for the top-k list (its min-width, the gap and a bar). */
const TOPK_ROOM = 300;

const CSS = `
.aw-generation .aw-gen-text { line-height: 1.9; max-width: 100%; margin: 4px 0 8px; }
.aw-generation .aw-gen-line { margin: 2px 0; white-space: normal; }
.aw-generation .aw-gen-label { color: var(--aw-muted); margin-right: 6px; }
.aw-generation .aw-tok { padding: 1px 2px; border-radius: 3px; white-space: pre; border: 2px solid transparent; }
.aw-generation .aw-tok.aw-future { opacity: 0.35; }
.aw-generation .aw-tok.aw-current { border-color: var(--aw-accent); font-weight: 700; }
.aw-generation .aw-gen-row { display: flex; gap: 18px; align-items: flex-start; flex-wrap: wrap; }
.aw-generation .aw-topk { min-width: 180px; }
.aw-generation .aw-topk-row { display: flex; gap: 6px; align-items: center; margin: 2px 0; }
.aw-generation .aw-topk-bar { height: 0.8em; background: var(--aw-accent); opacity: 0.7; }
.aw-generation .aw-topk-row.aw-chosen { font-weight: 700; }
.aw-generation input[type=range] { width: 220px; }
.aw-generation .aw-tok[data-pos] { cursor: pointer; user-select: none; }
.aw-generation .aw-tok.aw-sel { box-shadow: inset 0 -4px 0 var(--aw-accent); }
.aw-generation .aw-share { margin-top: 8px; }
`;

function render({ model, el }: RenderProps<GenerationTraits>): () => void {
  const shell = widgetShell(model, el, "aw-generation", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const text = h("div", { className: "aw-gen-text", "data-testid": "gen-text" });
  const { scroll, canvas } = scrolledCanvas("steps-canvas");
  const topk = h("div", { className: "aw-topk", "data-testid": "topk" });
  const caption = h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" });
  const row = h("div", { className: "aw-gen-row" }, scroll, topk);
  const shareCanvas = h("canvas", { className: "aw-canvas", "data-testid": "share-canvas" });
  const shareCaption = h("div", {
    className: "aw-muted",
    "data-testid": "share-caption",
    "data-export-text": "",
  });
  const sharePanel = h(
    "div",
    { className: "aw-share", "data-testid": "share-panel" },
    shareCaption,
    shareCanvas,
  );
  root.append(title, bar, errorBox, text, row, sharePanel, caption);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const requests = new Requester(model);
  cleanups.push(() => requests.dispose());
  const controls: Array<() => void> = [];
  let matrix: Matrix | null = null;
  let matrixKey = "";
  let probs: Matrix | null = null;
  let spans: HTMLSpanElement[][] = [[], []];
  let playing: ReturnType<typeof setInterval> | null = null;
  let slider: HTMLInputElement | null = null;
  let playButton: HTMLButtonElement | null = null;
  let layout = { x0: 0, y0: 0, cell: 1, rows: 0, cols: 0 };
  let shareLayout = { x0: 0, y0: 0, w: 0, h: 0, steps: 0 };
  let shareData: { key: string; data: Matrix } | null = null;
  const picker = new span.SpanSelector(model);
  let dragFrom: number | null = null; // the token a drag over the text started on

  const meta = () => model.get("_meta");
  const nSteps = () => meta().generated.length;
  const viewKey = () => `${model.get("kind")}/${model.get("layer")}/${model.get("head")}`;
  const cmap = (): ColorMapName =>
    (model.get("colormap") || theme(model.get("theme")).colormap) as ColorMapName;

  function setStep(step: number): void {
    const n = nSteps();
    const s = Math.max(0, Math.min(n - 1, step));
    if (s !== model.get("step")) saveTraits(model, { step: s });
  }

  function stopPlaying(): void {
    if (playing !== null) clearInterval(playing);
    playing = null;
    if (playButton) playButton.textContent = "▶ play";
  }
  cleanups.push(stopPlaying);

  function buildControls(): void {
    resetControls(controls, bar);
    const m = meta();
    const kind = model.get("kind");
    const [nLayers, nHeads] = m.shapes[kind] ?? [1, 1];
    if (m.kinds.length > 1) {
      const kinds = select(
        m.kinds.map((k) => [k, k === "cross" ? "cross-attention" : `${k} self-attention`]),
        kind,
        "attention",
      );
      controls.push(listen(kinds, "change", () => saveTraits(model, { kind: kinds.value })));
      bar.append(h("label", {}, "attention", kinds));
    }
    const layers = select(
      Array.from({ length: nLayers }, (_, i) => [String(i), String(i)] as [string, string]),
      String(model.get("layer")),
      "layer",
    );
    const heads = select(
      [
        ["-1", "mean"],
        ...Array.from({ length: nHeads }, (_, i) => [String(i), String(i)] as [string, string]),
      ],
      String(model.get("head")),
      "head",
    );
    controls.push(
      listen(layers, "change", () => saveTraits(model, { layer: Number(layers.value) })),
      listen(heads, "change", () => saveTraits(model, { head: Number(heads.value) })),
    );
    bar.append(h("label", {}, "layer", layers), h("label", {}, "head", heads));
    const prev = h("button", { text: "◀", "aria-label": "previous step", "data-testid": "prev" });
    const next = h("button", { text: "▶", "aria-label": "next step", "data-testid": "next" });
    playButton = h("button", { text: "▶ play", "aria-label": "play", "data-testid": "play" });
    slider = h("input", {
      type: "range",
      min: 0,
      max: Math.max(0, nSteps() - 1),
      step: 1,
      value: model.get("step"),
      "aria-label": "step",
      "data-testid": "step-slider",
    });
    const s = slider;
    const p = playButton;
    controls.push(
      listen(prev, "click", () => setStep(model.get("step") - 1)),
      listen(next, "click", () => setStep(model.get("step") + 1)),
      listen(s, "input", () => setStep(Number(s.value))),
      listen(p, "click", () => {
        if (playing !== null) {
          stopPlaying();
          return;
        }
        if (model.get("step") >= nSteps() - 1) setStep(0);
        p.textContent = "❚❚ pause";
        playing = setInterval(() => {
          if (model.get("step") >= nSteps() - 1) stopPlaying();
          else setStep(model.get("step") + 1);
        }, 700);
      }),
    );
    const by = select(
      [
        ["layer", "a line per layer"],
        ["head", "a line per head"],
      ],
      model.get("share_by") || "layer",
      "span share lines",
    );
    by.dataset.testid = "share-by";
    controls.push(listen(by, "change", () => saveTraits(model, { share_by: by.value })));
    bar.append(
      prev,
      s,
      next,
      p,
      span.spanControls(model, picker, controls),
      by,
      shell.exportControls(controls),
    );
  }

  function buildText(): void {
    const m = meta();
    text.replaceChildren();
    const lines: Array<[string, string[]]> = m.encoder_decoder
      ? [
          ["source", m.prompt],
          ["output", [m.keys.decoder?.[0] ?? "", ...m.generated]],
        ]
      : [["", [...m.prompt, ...m.generated]]];
    spans = [[], []];
    if (!m.encoder_decoder) {
      // one line: prompt then generated, but spans indexed as [prompt, generated]
      const line = h("div", { className: "aw-gen-line" });
      m.prompt.forEach((t, i) => {
        const s = h("span", { className: "aw-tok", "data-line": 0, "data-index": i, text: visibleText(t) });
        s.dataset.pos = String(i);
        spans[0].push(s);
        line.append(s);
      });
      m.generated.forEach((t, i) => {
        const s = h("span", { className: "aw-tok", "data-line": 1, "data-index": i, text: visibleText(t) });
        // a generated token is a fed position (selectable) unless it is the last, never fed back
        if (m.prompt.length + i < m.n_selectable) s.dataset.pos = String(m.prompt.length + i);
        spans[1].push(s);
        line.append(s);
      });
      text.append(line);
      return;
    }
    lines.forEach(([label, toks], li) => {
      const line = h(
        "div",
        { className: "aw-gen-line" },
        h("span", { className: "aw-gen-label", text: label }),
      );
      toks.forEach((t, i) => {
        const s = h("span", { className: "aw-tok", "data-line": li, "data-index": i, text: visibleText(t) });
        if (li === 0) s.dataset.pos = String(i); // the source: what cross-attention's keys are
        spans[li].push(s);
        line.append(s);
      });
      text.append(line);
    });
  }

  /** Row `step` of the current matrix (NaN: keys not written yet). */
  function stepRow(step: number): Float32Array | null {
    if (!matrix || matrixKey !== viewKey()) return null;
    const cols = matrix.shape[1];
    return matrix.data.subarray(step * cols, (step + 1) * cols);
  }

  function paintText(): void {
    const m = meta();
    const t = theme(model.get("theme"));
    const step = model.get("step");
    const kind = model.get("kind");
    const weights = stepRow(step);
    const nPrompt = m.prompt.length;
    // One colour scale with the heatmap below (the matrix's maximum), so a token's shade and its cell agree.
    let vmax = 0;
    if (weights && matrix) for (const v of matrix.data) if (Number.isFinite(v) && v > vmax) vmax = v;
    for (const line of spans)
      for (const s of line) {
        s.style.background = "";
        s.style.color = "";
        s.classList.remove("aw-current", "aw-future");
        delete s.dataset.weight;
        s.title = "";
      }
    // Tokens not written yet are dimmed; the token this step chose is outlined.
    const out = spans[1];
    const current = m.encoder_decoder ? step + 1 : step;
    for (let i = current + 1; i < out.length; i++) out[i].classList.add("aw-future");
    out[current]?.classList.add("aw-current");
    const picked = new Set(model.get("selection") ?? []);
    for (const line of spans)
      for (const s of line)
        s.classList.toggle("aw-sel", s.dataset.pos !== undefined && picked.has(Number(s.dataset.pos)));
    text.dataset.selection = [...picked].sort((a, b) => a - b).join(",");
    if (!weights) return;
    for (let k = 0; k < weights.length; k++) {
      const v = weights[k];
      if (!Number.isFinite(v)) continue;
      const [li, idx] = keySpan(kind, m.encoder_decoder, nPrompt, k);
      const s = spans[li][idx];
      if (!s) continue;
      const rgb = rgbAt(cmap(), v, vmax || 1);
      s.style.background = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      s.style.color = textOn(rgb);
      s.dataset.weight = String(v);
      s.dataset.key = String(k);
      s.title = `${fmt(v)}`;
    }
    text.dataset.step = String(step);
    text.dataset.view = viewKey();
    text.style.fontSize = `${t.font + 2}px`;
  }

  function paintMatrix(): void {
    const t = theme(model.get("theme"));
    const m = meta();
    const kind = model.get("kind");
    const keys = m.keys[kind] ?? [];
    const n = nSteps();
    const cols = keys.length;
    const ready = matrix && matrixKey === viewKey();
    const labelFont = Math.max(10, t.font - 2);
    const maxW = Math.min(t.maxGrid, roomFor(el) - 260);
    let cell = Math.max(3, Math.min(t.maxCell, Math.floor(Math.max(120, maxW) / Math.max(cols, n, 1))));
    // fitted: the steps x keys map beside the top-k list, inside the box (with the span-share panel under it)
    const panel = sharing();
    const room = fit.room(panel ? [row, sharePanel] : row);
    if (room) {
      const mapH = room.height - (panel ? shareHeight(t, room.height) + t.font * 3.5 : 0);
      const byW = Math.floor((room.width - TOPK_ROOM - Math.min(140, labelFont * 7) - 8) / Math.max(cols, 1));
      const byH = Math.floor((mapH - Math.min(120, labelFont * 6) - 8) / Math.max(n, 1));
      cell = Math.max(3, Math.min(cell, byW, byH));
    }
    const showLabels = cell >= 10;
    const x0 = showLabels ? Math.min(140, labelFont * 7) : 8;
    const y0 = showLabels ? Math.min(120, labelFont * 6) : 8;
    const width = x0 + cols * cell + 8;
    const height = y0 + n * cell + 8;
    const ctx = prepareCanvas(canvas, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    layout = { x0, y0, cell, rows: n, cols };
    if (ready && matrix) {
      let vmax = 0;
      for (const v of matrix.data) if (Number.isFinite(v) && v > vmax) vmax = v;
      drawMatrix(ctx, matrix.data, n, cols, x0, y0, cols * cell, n * cell, vmax || 1, cmap());
    }
    const step = model.get("step");
    if (showLabels) {
      ctx.font = `${labelFont}px ${t.fontFamily}`;
      ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      for (let q = 0; q < n; q++) {
        ctx.fillStyle = q === step ? t.accent : t.fg;
        ctx.fillText(fitToken(ctx, m.generated[q] ?? "", x0 - 8), x0 - 4, y0 + (q + 0.5) * cell);
      }
      ctx.textAlign = "left";
      for (let k = 0; k < cols; k++) {
        ctx.save();
        ctx.translate(x0 + (k + 0.5) * cell, y0 - 4);
        ctx.rotate(-Math.PI / 2);
        ctx.fillStyle = t.fg;
        ctx.fillText(fitToken(ctx, keys[k] ?? "", y0 - 8), 0, 0);
        ctx.restore();
      }
    }
    ctx.strokeStyle = t.accent;
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 - 1, y0 + step * cell - 1, cols * cell + 2, cell + 2);
    Object.assign(canvas.dataset, {
      x0: String(x0),
      y0: String(y0),
      cell: String(cell),
      rows: String(n),
      cols: String(cols),
      step: String(step),
      view: viewKey(),
      ready: ready ? "1" : "0",
    });
  }

  function paintTopk(): void {
    const m = meta();
    const step = model.get("step");
    topk.replaceChildren(h("div", { className: "aw-muted", text: "next-token probabilities" }));
    if (!probs) return;
    const k = probs.shape[1];
    const chosen = m.generated[step];
    for (let j = 0; j < k; j++) {
      const p = probs.data[step * k + j];
      const tok = m.topk_tokens[step]?.[j] ?? "";
      const rowEl = h(
        "div",
        { className: `aw-topk-row${tok === chosen ? " aw-chosen" : ""}`, "data-prob": String(p) },
        h("span", { text: tokenLabel(tok, 16), style: "min-width: 6em; display: inline-block" }),
        h("span", { className: "aw-topk-bar", style: `width: ${Math.round(p * 120)}px` }),
        h("span", { text: `${(p * 100).toFixed(1)}%` }),
      );
      topk.append(rowEl);
    }
  }

  /** The fed tokens a selection indexes (their display text), for its caption. */
  function selectable(): string[] {
    const m = meta();
    const all = m.encoder_decoder ? m.prompt : [...m.prompt, ...m.generated];
    return all.slice(0, m.n_selectable);
  }

  /** "3 tokens: c at (1–3)": the selected tokens (the first few), with their positions when they are one span. */
  function selectionText(tokens: string[], selection: number[]): string {
    const shown = selection.slice(0, 6).map((p) => tokens[p] ?? "?");
    const more = selection.length > 6 ? " …" : "";
    const one = span.spanRuns(selection).length === 1;
    const where = one
      ? ` (${selection[0]}${selection.length > 1 ? `–${selection[selection.length - 1]}` : ""})`
      : "";
    return `${selection.length} ${selection.length === 1 ? "token" : "tokens"}: ${shown.join(one ? " " : " · ")}${more}${where}`;
  }

  /** Whether the span-share panel is shown (something selected, and Python's answer for it). */
  const sharing = () => Boolean((model.get("selection") ?? []).length && model.get("_share")?.key);

  /** The panel's plot height: its own, or when fitted to a box of `roomH` a part of it (the map keeps the rest). */
  function shareHeight(t: Theme, roomH: number | null): number {
    const own = t.name === "lecture" ? 190 : 150;
    return roomH === null ? own : Math.max(100, Math.min(own, Math.round(roomH * 0.38)));
  }

  /** The span-share panel: one line per layer (or head) over the steps, the current step marked. */
  function paintShare(): void {
    const t = theme(model.get("theme"));
    const share = model.get("_share") ?? {};
    const selection = model.get("selection") ?? [];
    if (!selection.length || !share.key) {
      sharePanel.style.display = "none";
      shareCanvas.dataset.key = "";
      return;
    }
    sharePanel.style.display = "";
    const what = userText(selectionText(selectable(), selection));
    if (share.error) {
      shareCaption.textContent = `${what}: ${share.error}`;
      shareCanvas.style.display = "none";
      shareCanvas.dataset.key = share.key;
      shareCanvas.dataset.lines = "0";
      return;
    }
    shareCanvas.style.display = "";
    if (!share.lines) return;
    if (shareData?.key !== share.key) shareData = { key: share.key, data: decode(share.lines) };
    const { data } = shareData;
    const [n, nLines] = data.shape;
    const labels = share.labels ?? [];
    const sum = (model.get("combine") || "sum") === "sum";
    shareCaption.textContent =
      `${sum ? "share of each step's attention on" : "mean weight per token of"} ${what}` +
      ` · ${model.get("share_by") === "head" ? `heads of layer ${model.get("layer")}` : "each layer, mean of its heads"}` +
      " · click a step to go there";
    let ymax = sum ? 1 : 0;
    if (!sum) for (const v of data.data) if (Number.isFinite(v) && v > ymax) ymax = v;
    ymax = ymax || 1;
    const font = Math.max(10, t.font - 2);
    const legend = nLines <= 16;
    const x0 = Math.round(font * 3.2);
    const y0 = Math.round(font * 0.8);
    const legendW = legend ? Math.round(font * 7) : 0;
    const width = Math.max(260, Math.min(t.maxGrid + TOPK_ROOM - 60, roomFor(el) - 24));
    const fitted = fit.room([row, sharePanel]);
    const h = shareHeight(t, fitted ? fitted.height : null);
    const w = width - x0 - legendW - 12;
    const plotH = h - y0 - font * 2.2;
    const ctx = prepareCanvas(shareCanvas, width, h);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, h);
    shareLayout = { x0, y0, w, h: plotH, steps: n };
    const xOf = (s: number) => x0 + (n > 1 ? s / (n - 1) : 0.5) * w;
    const yOf = (v: number) => y0 + plotH - (Math.max(0, Math.min(ymax, v)) / ymax) * plotH;
    // axes and ticks
    ctx.strokeStyle = t.grid;
    ctx.lineWidth = 1;
    ctx.font = `${font}px ${t.fontFamily}`;
    ctx.fillStyle = t.fg;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (const f of [0, 0.5, 1]) {
      const y = yOf(f * ymax);
      ctx.beginPath();
      ctx.moveTo(x0, y);
      ctx.lineTo(x0 + w, y);
      ctx.stroke();
      ctx.fillText(fmt(f * ymax, 2), x0 - 4, y);
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.fillText("0", xOf(0), y0 + plotH + 4);
    if (n > 1) ctx.fillText(String(n - 1), xOf(n - 1), y0 + plotH + 4);
    ctx.fillText("step", x0 + w / 2, y0 + plotH + 4);
    // the current step
    // the current step: dashed, in the foreground colour (the lecture accent is also a line's colour)
    const step = model.get("step");
    ctx.strokeStyle = t.fg;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([5, 4]);
    ctx.beginPath();
    ctx.moveTo(xOf(step), y0);
    ctx.lineTo(xOf(step), y0 + plotH);
    ctx.stroke();
    ctx.setLineDash([]);
    // one line per layer or head
    ctx.lineWidth = t.name === "lecture" ? 3 : 2;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    const colours: string[] = [];
    for (let j = 0; j < nLines; j++) {
      const colour = readableOn(categorical(j), t.bg, 3);
      colours.push(colour);
      ctx.strokeStyle = colour;
      ctx.beginPath();
      for (let s2 = 0; s2 < n; s2++) {
        const v = data.data[s2 * nLines + j];
        if (s2 === 0) ctx.moveTo(xOf(s2), yOf(v));
        else ctx.lineTo(xOf(s2), yOf(v));
      }
      if (n === 1) ctx.lineTo(xOf(0) + 2, yOf(data.data[j]));
      ctx.stroke();
      if (legend) {
        ctx.fillStyle = colour;
        ctx.fillText(labels[j] ?? "", x0 + w + 8, y0 + (j + 0.5) * Math.min(font * 1.2, plotH / nLines));
      }
    }
    Object.assign(shareCanvas.dataset, {
      x0: String(x0),
      y0: String(y0),
      w: String(w),
      h: String(plotH),
      steps: String(n),
      lines: String(nLines),
      ymax: String(ymax),
      colours: colours.join(","),
      key: share.key,
      step: String(step),
    });
  }

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const m = meta();
    const step = model.get("step");
    const kind = model.get("kind");
    if (slider) {
      slider.value = String(step);
      slider.max = String(Math.max(0, nSteps() - 1));
    }
    title.textContent = `${userText(m.title)} · generated token ${step + 1} of ${nSteps()}`;
    paintText();
    paintMatrix();
    paintTopk();
    paintShare();
    const what = kind === "cross" ? "cross-attention over the source" : "self-attention";
    caption.textContent =
      `step=${step}: the query that wrote ${userText(tokenLabel(m.generated[step] ?? ""))}, ` +
      `${what}, head ${headLabel(model.get("layer"), model.get("head"))}` +
      `${model.get("head") < 0 ? " (mean over heads)" : ""}. Grey: tokens not written yet.`;
  }

  async function ensureMatrix(): Promise<void> {
    const key = viewKey();
    if (matrix && matrixKey === key) return;
    const payload = model.get("_payload");
    if (payload.key === key) {
      matrix = decode(payload.matrix);
      matrixKey = key;
      return;
    }
    const req = {
      what: "matrix",
      kind: model.get("kind"),
      layer: model.get("layer"),
      head: model.get("head"),
    };
    try {
      const reply = await requests.get(key, req);
      if (viewKey() !== key) return;
      matrix = decode(replyPacked(reply.content, reply.buffers[0]));
      matrixKey = key;
      showError("");
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  function load(): void {
    try {
      probs = decode(model.get("_payload").topk_probs);
      matrix = null;
      matrixKey = "";
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    buildControls();
    buildText();
    refresh();
  }

  function refresh(): void {
    paint();
    ensureMatrix().then(paint);
  }

  cleanups.push(
    onModel(model, "change:step", paint),
    onModel(model, "change:theme", () => {
      buildControls();
      paint();
    }),
    onModel(model, "change:colormap", paint),
    onModel(model, "change:kind", () => {
      buildControls();
      refresh();
    }),
    onModel(model, "change:layer", () => {
      buildControls();
      refresh();
    }),
    onModel(model, "change:head", () => {
      buildControls();
      refresh();
    }),
    onModel(model, "change:_payload", load),
    onModel(model, "change:_share", paint),
    onModel(model, "change:selection", paint),
    onModel(model, "change:share_by", () => {
      buildControls();
      paint();
    }),
    onModel(model, "change:combine", () => {
      buildControls();
      paint();
    }),
    listen(text, "mousedown", (e: MouseEvent) => {
      const pos = (e.target as HTMLElement).closest?.(".aw-tok")?.getAttribute("data-pos");
      if (pos === null || pos === undefined) return;
      e.preventDefault(); // no text selection while dragging over tokens
      picker.click(Number(pos), e);
      dragFrom = e.shiftKey || e.ctrlKey || e.metaKey ? null : Number(pos);
    }),
    listen(text, "mouseover", (e: MouseEvent) => {
      if (dragFrom === null || !(e.buttons & 1)) return;
      const pos = (e.target as HTMLElement).closest?.(".aw-tok")?.getAttribute("data-pos");
      if (pos === null || pos === undefined) return;
      const to = Number(pos);
      const sel = model.get("selection") ?? [];
      const lo = Math.min(dragFrom, to);
      const hi = Math.max(dragFrom, to);
      if (sel.length === hi - lo + 1 && sel[0] === lo) return;
      picker.anchor = dragFrom;
      picker.click(to, { shiftKey: true, ctrlKey: false, metaKey: false });
    }),
    listen(window, "mouseup", () => {
      dragFrom = null;
    }),
    listen(shareCanvas, "click", (e: MouseEvent) => {
      const r = shareCanvas.getBoundingClientRect();
      const { x0, w, steps } = shareLayout;
      if (steps < 1) return;
      const f = (e.clientX - r.left - x0) / Math.max(1, w);
      if (f < -0.02 || f > 1.02) return;
      stopPlaying();
      setStep(Math.round(Math.max(0, Math.min(1, f)) * (steps - 1)));
    }),
    onModel(model, "change:_meta", load),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e) && !(e.target instanceof HTMLInputElement && e.target.type === "range")) return;
      if (e.key === "Escape" && (model.get("selection") ?? []).length) {
        picker.clear();
        return;
      }
      if (e.target === slider) return; // the slider steps itself
      const s = stepKey(e.key, model.get("step"), nSteps());
      if (s === null) return;
      e.preventDefault();
      e.stopPropagation();
      stopPlaying();
      setStep(s);
    }),
    listen(canvas, "click", (e: MouseEvent) => {
      const r = canvas.getBoundingClientRect();
      const y = e.clientY - r.top;
      const q = Math.floor((y - layout.y0) / layout.cell);
      if (q >= 0 && q < layout.rows) setStep(q);
    }),
  );
  load();
  return shell.close;
}

export default { render };
