// FillMask: type a sentence with [MASK]; the model's top-k fillers per [MASK] as bars with probabilities, and the
// attention of one [MASK] position over the tokens (layer / head menus, head -1 = the layer's mean). Mirrors
// attnwidgets/widgets/fill_mask.py. Typing sets the synced `text` trait (Enter or leaving the box); Python fills it
// in again and sends a new payload. Token text is drawn on canvases or set as textContent, never as markup.

import { type Packed, decode } from "./shared/buffers";
import { categorical } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { fitToken, prepareCanvas, textMeasurer } from "./shared/draw";
import { roomFor } from "./shared/heads";
import { type RenderProps, onModel, saveTraits } from "./shared/model";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hoverTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

interface Fill {
  tokens: string[];
  probs: number[];
}

/** Python traits of FillMask (attnwidgets/widgets/fill_mask.py). */
export interface FillMaskTraits {
  text: string;
  k: number;
  layer: number;
  head: number;
  mask: number;
  theme: string;
  _error: string;
  _meta: { model: string; shape: number[] }; // shape: (masks, layers, heads, tokens)
  _payload: {
    tokens: string[];
    positions: number[];
    fills: Fill[];
    rows: Packed;
    text: string;
  };
}

const CSS = `
.aw-fill-mask input.aw-fill-text[type="text"] { font: inherit; width: 32em; max-width: 90%; padding: 2px 6px; }
.aw-fill-mask canvas { display: block; }
`;

/** The attention of mask `m` at `layer` over the tokens; head -1 is the mean over the layer's heads. */
export function attentionRow(
  rows: Float32Array,
  shape: number[],
  m: number,
  layer: number,
  head: number,
): Float32Array {
  const [, nLayers, nHeads, n] = shape;
  const out = new Float32Array(n);
  const base = (m * nLayers + layer) * nHeads * n;
  const heads = head < 0 ? Array.from({ length: nHeads }, (_, i) => i) : [head];
  for (const hh of heads) for (let j = 0; j < n; j++) out[j] += rows[base + hh * n + j] / heads.length;
  return out;
}

function render({ model, el }: RenderProps<FillMaskTraits>): () => void {
  const shell = widgetShell(model, el, "aw-fill-mask", CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const input = h("input", {
    type: "text",
    className: "aw-fill-text",
    "aria-label": "sentence with [MASK]",
    "data-testid": "fill-text",
    spellcheck: "false",
  });
  const inputRow = h("div", { className: "aw-bar" }, h("label", {}, "sentence ", input));
  const fillsCanvas = h("canvas", { className: "aw-canvas", "data-testid": "fills-canvas" });
  const rowCanvas = h("canvas", { className: "aw-canvas", "data-testid": "row-canvas" });
  const rowTitle = h("div", { className: "aw-muted", "data-testid": "row-title", "data-export-text": "" });
  const caption = h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" });
  const tooltip = tooltipBox();
  root.append(title, inputRow, bar, errorBox, fillsCanvas, rowTitle, rowCanvas, caption, tooltip);

  let rows: Float32Array = new Float32Array(0);
  let colW = 0;
  let rowX0 = 0;
  let panel = { w: 1, h: 1, perRow: 1, n: 0 }; // the bars' panels, one per [MASK]: a click picks that [MASK]
  const controls = controlGroup(cleanups);
  // The pictures are as wide as the widget (the row title spans it); drawn again when that width changes.
  let measured = 0;
  const avail = (name: string) => {
    const w = measured || roomFor(el);
    return Math.max(240, Math.min(w - 8, name === "lecture" ? 1180 : 900));
  };
  const resize = new ResizeObserver(() => {
    if (rowTitle.clientWidth === measured) return;
    measured = rowTitle.clientWidth;
    paint();
  });
  resize.observe(rowTitle);
  cleanups.push(() => resize.disconnect());

  function buildControls(): void {
    resetControls(controls, bar);
    const [nMasks, nLayers, nHeads] = model.get("_meta").shape;
    const menu = (name: "layer" | "head" | "mask", options: Array<[string, string]>, label: string) => {
      const s = select(options, String(model.get(name)), name);
      controls.push(listen(s, "change", () => saveTraits(model, { [name]: Number(s.value) })));
      bar.append(h("label", {}, `${label} `, s));
    };
    if (nMasks > 1) {
      menu(
        "mask",
        Array.from({ length: nMasks }, (_, i): [string, string] => [String(i), `#${i + 1}`]),
        "attention of [MASK]",
      );
    }
    menu(
      "layer",
      Array.from({ length: nLayers }, (_, i): [string, string] => [String(i), String(i)]),
      "layer",
    );
    menu(
      "head",
      [["-1", "mean"], ...Array.from({ length: nHeads }, (_, i): [string, string] => [String(i), String(i)])],
      "head",
    );
    bar.append(shell.exportControls(controls));
  }

  function paintFills(): void {
    const t = theme(model.get("theme"));
    const p = model.get("_payload");
    const fills = p.fills ?? [];
    const k = Math.max(1, ...fills.map((f) => f.tokens.length));
    const probe = textMeasurer();
    const font = `${t.font}px ${t.fontFamily}`;
    probe.font = font;
    const lineH = Math.round(t.font * 1.6);
    const labelW = Math.round(t.font * 7);
    const valueW = Math.round(probe.measureText("100.0 %").width) + 8;
    const room = avail(t.name);
    const perRow = Math.max(1, Math.min(fills.length, Math.floor(room / (labelW + valueW + t.font * 6))));
    const panelW = Math.floor(Math.min(room / perRow, labelW + valueW + t.font * 14));
    const barMax = panelW - labelW - valueW - 16;
    // One scale for every panel: the longest bar is the most probable filler shown (the % says how probable).
    const pMax = Math.max(1e-6, ...fills.flatMap((f) => f.probs));
    const panelH = lineH * (k + 1) + 8;
    const nRows = Math.ceil(fills.length / perRow);
    const ctx = prepareCanvas(fillsCanvas, panelW * perRow, panelH * nRows);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, panelW * perRow, panelH * nRows);
    ctx.font = font;
    ctx.textBaseline = "middle";
    fills.forEach((f, m) => {
      const x0 = (m % perRow) * panelW;
      const y0 = Math.floor(m / perRow) * panelH;
      ctx.fillStyle = m === model.get("mask") ? t.accent : t.fg;
      ctx.textAlign = "left";
      ctx.font = `bold ${font}`;
      ctx.fillText(`[MASK] #${m + 1} (token ${p.positions[m]})`, x0 + 4, y0 + lineH / 2);
      ctx.font = font;
      f.tokens.forEach((tok, r) => {
        const y = y0 + lineH * (r + 1);
        const pr = f.probs[r];
        ctx.fillStyle = t.fg;
        ctx.textAlign = "right";
        ctx.fillText(fitToken(ctx, tok, labelW - 10), x0 + labelW - 6, y + lineH / 2);
        ctx.fillStyle = categorical(m);
        ctx.fillRect(x0 + labelW, y + lineH * 0.15, Math.max(1, (barMax * pr) / pMax), lineH * 0.7);
        ctx.fillStyle = t.fg;
        ctx.textAlign = "left";
        ctx.fillText(`${(100 * pr).toFixed(1)} %`, x0 + labelW + (barMax * pr) / pMax + 6, y + lineH / 2);
      });
    });
    panel = { w: panelW, h: panelH, perRow, n: fills.length };
    Object.assign(fillsCanvas.dataset, {
      nMasks: String(fills.length),
      top: fills.map((f) => f.tokens[0] ?? "").join("\u241f"),
      nBars: String(fills.reduce((a, f) => a + f.tokens.length, 0)),
      // what the bars say, per [MASK]: its words and probabilities as drawn (for tests and screen readers)
      words: JSON.stringify(fills.map((f) => f.tokens)),
      probs: JSON.stringify(fills.map((f) => f.probs)),
      selected: String(model.get("mask")),
      perRow: String(perRow),
      panelW: String(panelW),
      panelH: String(panelH),
    });
  }

  function paintRow(): void {
    const t = theme(model.get("theme"));
    const p = model.get("_payload");
    const shape = model.get("_meta").shape;
    const m = Math.min(model.get("mask"), shape[0] - 1);
    const layer = model.get("layer");
    const head = model.get("head");
    const tokens = p.tokens ?? [];
    const n = tokens.length;
    const values = rows.length ? attentionRow(rows, shape, m, layer, head) : new Float32Array(n);
    const font = `${t.font}px ${t.fontFamily}`;
    const room = avail(t.name);
    rowX0 = Math.round(t.font * 3.2);
    colW = Math.max(8, Math.min(t.font * 4.5, Math.floor((room - rowX0) / Math.max(1, n))));
    const plotH = Math.round(t.font * 5);
    const rotated = colW < t.font * 4;
    const labelH = Math.round(rotated ? t.font * 4.5 : t.font * 1.8);
    const width = rowX0 + colW * n + 8;
    const height = t.font + plotH + labelH;
    const ctx = prepareCanvas(rowCanvas, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    ctx.font = font;
    let vmax = 0;
    for (const v of values) if (v > vmax) vmax = v;
    const top = Math.max(vmax, 1e-6);
    const y0 = t.font;
    ctx.fillStyle = t.muted;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillText(top.toFixed(2), rowX0 - 4, y0);
    ctx.fillText("0", rowX0 - 4, y0 + plotH);
    const masks = new Set(p.positions ?? []);
    for (let j = 0; j < n; j++) {
      const x = rowX0 + j * colW;
      const bh = (plotH * values[j]) / top;
      ctx.fillStyle = j === p.positions[m] ? t.accent : masks.has(j) ? t.muted : categorical(0);
      ctx.fillRect(x + 2, y0 + plotH - bh, colW - 4, bh);
      ctx.save();
      ctx.translate(x + colW / 2, y0 + plotH + 6);
      ctx.rotate(rotated ? -Math.PI / 4 : 0);
      ctx.textAlign = rotated ? "right" : "center";
      ctx.textBaseline = "top";
      ctx.fillStyle = j === p.positions[m] ? t.accent : t.fg;
      ctx.fillText(fitToken(ctx, tokens[j], rotated ? labelH * 1.3 : colW - 4, 12), 0, 0);
      ctx.restore();
    }
    ctx.strokeStyle = t.fg;
    ctx.beginPath();
    ctx.moveTo(rowX0, y0 + plotH + 0.5);
    ctx.lineTo(rowX0 + colW * n, y0 + plotH + 0.5);
    ctx.stroke();
    Object.assign(rowCanvas.dataset, {
      n: String(n),
      x0: String(rowX0),
      colW: String(colW),
      max: String(vmax),
    });
    const headText = head < 0 ? "mean of the heads" : `head ${head}`;
    rowTitle.textContent = `Where [MASK] #${m + 1} attends: layer ${layer}, ${headText}`;
  }

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    title.textContent = `${userText(model.get("_meta").model ?? "")} · fill in the [MASK]`;
    if (document.activeElement !== input) input.value = model.get("text");
    paintFills();
    paintRow();
    const several = (model.get("_payload").fills ?? []).length > 1;
    caption.textContent =
      "Bars: each filler's probability (softmax over all pieces, top k). " +
      (several ? "Click a [MASK]'s bars to see where it attends. " : "") +
      "Type a sentence with [MASK], then Enter.";
  }

  function load(): void {
    try {
      rows = decode(model.get("_payload").rows).data;
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    buildControls();
    paint();
  }

  const submit = () => {
    if (input.value !== model.get("text")) saveTraits(model, { text: input.value });
  };
  cleanups.push(
    listen(input, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Enter") submit();
    }),
    listen(input, "change", submit),
    listen(fillsCanvas, "click", (e: MouseEvent) => {
      const rect = fillsCanvas.getBoundingClientRect();
      const col = Math.floor((e.clientX - rect.left) / panel.w);
      const row = Math.floor((e.clientY - rect.top) / panel.h);
      const m = row * panel.perRow + col;
      if (col >= 0 && col < panel.perRow && m >= 0 && m < panel.n && m !== model.get("mask")) {
        saveTraits(model, { mask: m });
      }
    }),
    ...hoverTooltip(rowCanvas, root, tooltip, {
      hitAt: (e) => {
        const rect = rowCanvas.getBoundingClientRect();
        const j = Math.floor((e.clientX - rect.left - rowX0) / (colW || 1));
        return j >= 0 && j < (model.get("_payload").tokens ?? []).length ? j : null;
      },
      same: (a, b) => a === b,
      tip: (j) => {
        const shape = model.get("_meta").shape;
        const v = attentionRow(rows, shape, model.get("mask"), model.get("layer"), model.get("head"))[j];
        const tok = model.get("_payload").tokens[j];
        return { text: `token ${j}: ${userText(tok)}\nattention ${v.toFixed(3)}`, data: { key: String(j) } };
      },
      changed: () => {},
    }),
    onModel(model, "change:_payload", load),
    onModel(model, "change:_meta", load),
    onModel(model, "change:layer", paint),
    onModel(model, "change:head", paint),
    onModel(model, "change:mask", () => {
      buildControls();
      paint();
    }),
    onModel(model, "change:theme", paint),
    onModel(model, "change:text", () => {
      if (document.activeElement !== input) input.value = model.get("text");
    }),
  );
  void errorBox;
  load();
  return shell.close;
}

export default { render };
