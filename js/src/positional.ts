// PositionalExplorer: a positional encoding as a heatmap and the position-to-position matrix beside it.
// Mirrors attnwidgets/widgets/positional.py. Python computes both panels (numpy, teaching kit) and sends them as
// float32 buffers in `_payload.panels`; the page picks the encoding and moves the sliders, which set the Python traits.

import { type Packed, decode } from "./shared/buffers";
import { type DivergingName, absMax, divergingCss } from "./shared/diverging";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { prepareCanvas } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { type RenderProps, onModel, saveTraits } from "./shared/model";
import {
  type PanelGeometry,
  captionAndRow,
  divergingPixels,
  panelCellAt,
  panelGeometry,
  slider,
  tickIndices,
} from "./shared/teaching";
import { applyTheme, theme } from "./shared/theme";
import { hideTooltip, showTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

/** One panel as Python sends it (attnwidgets/widgets/positional.py: positional_panels). */
export interface PositionalPanel {
  title: string;
  rows: string; // axis name of the rows
  cols: string; // axis name of the columns
  col_start: number; // number of the first column (T5 offsets start below 0)
  value: string; // what a cell holds
  note?: string;
  matrix: Packed; // (rows, cols) float32, NaN where masked
  extra?: Packed; // same shape, e.g. T5 bucket
  extra_name?: string;
  // The colour scale, chosen in Python (attnwidgets/viewdata/scales.py): the shade each cell is drawn with (-1..1,
  // 0 white; clipped at a percentile, or one scale per row), the legend's end texts and what the scale is, in words.
  shade?: Packed;
  legend?: [string, string];
  vmax?: number;
  scale_note?: string;
}

/** Python traits of PositionalExplorer (attnwidgets/widgets/positional.py). */
export interface PositionalTraits {
  encoding: string; // "sinusoidal" | "learned" | "rope" | "alibi" | "t5"
  length: number;
  d_model: number;
  n_heads: number;
  head: number;
  causal: boolean;
  similarity: string; // "cosine" | "dot"
  colormap: string; // "" = the theme's diverging scale; "rdbu" | "puor"
  theme: string;
  _payload: { panels: PositionalPanel[] } | Record<string, never>;
  _meta: {
    caption: string;
    table_name: string;
    has_table: boolean;
    table_shape: [number, number] | null;
    max_length: number;
    max_d_model: number;
  };
  _error: string;
}

type Editable = Pick<
  PositionalTraits,
  "encoding" | "length" | "d_model" | "n_heads" | "head" | "causal" | "similarity"
>;

const ENCODINGS: Array<[string, string]> = [
  ["sinusoidal", "sinusoidal (Vaswani)"],
  ["learned", "learned (BERT)"],
  ["rope", "RoPE (rotary)"],
  ["alibi", "ALiBi (linear bias)"],
  ["t5", "T5 relative buckets"],
];

interface Drawn {
  panel: PositionalPanel;
  data: Float32Array;
  extra: Float32Array | null;
  geom: PanelGeometry;
  vmax: number;
}

function render({ model, el }: RenderProps<PositionalTraits>): () => void {
  const shell = widgetShell(model, el, "aw-positional");
  const { root, title, bar, errorBox, cleanups } = shell;
  const { caption, row } = captionAndRow(18);
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, caption, row, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  const boxes = [0, 1].map((i) => {
    const head = h("div", { className: "aw-title", "data-testid": `panel-title-${i}` });
    const canvas = h("canvas", { "data-testid": `pos-panel-${i}` });
    const note = h("div", { className: "aw-muted", "data-testid": `panel-note-${i}` });
    note.style.maxWidth = "420px";
    const legend = h("canvas", { "data-export-text": true });
    const lo = h("span", { className: "aw-muted", "data-export-text": true });
    const hi = h("span", { className: "aw-muted", "data-export-text": true });
    const legendRow = h("div", { className: "aw-legend" }, lo, legend, hi);
    const scale = h("div", {
      className: "aw-muted",
      "data-testid": `scale-note-${i}`,
      "data-export-text": true,
    });
    scale.style.maxWidth = "420px";
    const box = h("div", {}, head, canvas, legendRow, scale, note);
    row.append(box);
    return { head, canvas, note, legend, lo, hi, scale, box };
  });
  let drawn: Drawn[] = [];

  const update = (changes: Partial<Editable>) => saveTraits(model, changes);

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const meta = model.get("_meta");
    const enc = model.get("encoding");
    const encSel = select(ENCODINGS, enc, "encoding");
    encSel.dataset.testid = "encoding-select";
    controls.push(listen(encSel, "change", () => update({ encoding: encSel.value })));
    bar.append(h("label", {}, "encoding", encSel));
    bar.append(
      slider(
        "length",
        { min: 2, max: meta.max_length ?? 512, value: model.get("length"), testid: "length-slider" },
        (v) => update({ length: v }),
        controls,
      ).wrap,
    );
    const fixedWidth = enc === "learned" && meta.has_table;
    if (enc === "sinusoidal" || enc === "rope" || (enc === "learned" && !fixedWidth)) {
      bar.append(
        slider(
          enc === "rope" ? "head width d" : "d_model",
          {
            min: 2,
            max: meta.max_d_model ?? 512,
            step: 2,
            value: model.get("d_model"),
            testid: "dmodel-slider",
          },
          (v) => update({ d_model: v }),
          controls,
        ).wrap,
      );
    }
    if (enc === "sinusoidal" || enc === "learned") {
      const sim = select(
        [
          ["cosine", "cosine"],
          ["dot", "dot product"],
        ],
        model.get("similarity"),
        "similarity",
      );
      sim.dataset.testid = "similarity-select";
      controls.push(listen(sim, "change", () => update({ similarity: sim.value })));
      bar.append(h("label", {}, "similarity", sim));
    }
    if (enc === "alibi" || enc === "t5") {
      const nHeads = model.get("n_heads");
      bar.append(
        slider(
          "heads",
          { min: 1, max: 16, value: nHeads, testid: "heads-slider" },
          (v) => update({ n_heads: v, head: Math.min(model.get("head"), v - 1) }),
          controls,
        ).wrap,
        slider(
          "head",
          { min: 0, max: Math.max(nHeads - 1, 0), value: model.get("head"), testid: "head-slider" },
          (v) => update({ head: v }),
          controls,
        ).wrap,
      );
      const box = h("input", { type: "checkbox", "aria-label": "causal", "data-testid": "causal-box" });
      box.checked = model.get("causal");
      controls.push(listen(box, "change", () => update({ causal: box.checked })));
      bar.append(h("label", {}, box, "causal (decoder)"));
    }
    bar.append(shell.exportControls(controls));
  }

  /** Fitted: the largest panel side (CSS px) that puts both panels side by side inside the box, with their titles,
   * legends and notes; null when not fitting. */
  function fittedSide(big: boolean, left: number): number | null {
    const room = fit.room(row);
    row.style.flexWrap = room ? "nowrap" : "wrap";
    if (!room) return null;
    const chrome = Math.max(
      ...boxes.map((b) => b.box.getBoundingClientRect().height - b.canvas.getBoundingClientRect().height),
    );
    const gap = Number.parseFloat(row.style.gap) || 0;
    const across = (room.width - gap) / 2 - left - 12;
    const down = room.height - chrome - 8 - (big ? 56 : 42);
    return Math.max(60, Math.min(big ? 440 : 340, across, down));
  }

  function drawPanel(i: number, panel: PositionalPanel, side: number | null): Drawn {
    const t = theme(model.get("theme"));
    const m = decode(panel.matrix);
    const [rows, cols] = m.shape;
    const extra = panel.extra ? decode(panel.extra).data : null;
    const big = t.name === "lecture";
    const left = big ? 70 : 52;
    const box = side ?? (big ? 440 : 340);
    const geom = panelGeometry(rows, cols, box, box, left, 8, big ? 40 : 28);
    const width = Math.ceil(left + Math.max(geom.w, 120) + 12);
    const height = Math.ceil(8 + geom.h + (big ? 56 : 42));
    const { canvas } = boxes[i];
    const ctx = prepareCanvas(canvas, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    const map = (model.get("colormap") || (big ? "puor" : "rdbu")) as DivergingName;
    // Python's shade (-1..1) when sent; else the matrix on +-max |value| (an older payload)
    const shade = panel.shade ? decode(panel.shade).data : null;
    const vmax = panel.vmax ?? (absMax(m.data) || 1);
    const off = document.createElement("canvas");
    off.width = Math.max(cols, 1);
    off.height = Math.max(rows, 1);
    const pixels = shade
      ? divergingPixels(shade, rows, cols, 1, map)
      : divergingPixels(m.data, rows, cols, vmax, map);
    off.getContext("2d")!.putImageData(new ImageData(pixels, cols, rows), 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, geom.x0, geom.y0, geom.w, geom.h);
    ctx.strokeStyle = t.grid;
    ctx.strokeRect(geom.x0 - 0.5, geom.y0 - 0.5, geom.w + 1, geom.h + 1);
    // Axes: a few ticks, then the axis names (text drawn as pixels).
    const font = big ? 16 : 11;
    ctx.font = `${font}px ${t.fontFamily}`;
    ctx.fillStyle = t.fg;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const r of tickIndices(rows, 5)) ctx.fillText(String(r), geom.x0 - 4, geom.y0 + (r + 0.5) * geom.ch);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const c of tickIndices(cols, 5))
      ctx.fillText(String(c + panel.col_start), geom.x0 + (c + 0.5) * geom.cw, geom.y0 + geom.h + 3);
    ctx.fillStyle = t.muted;
    ctx.fillText(panel.cols, geom.x0 + geom.w / 2, geom.y0 + geom.h + font + 8);
    ctx.save();
    ctx.translate(font / 2 + 2, geom.y0 + geom.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText(panel.rows, 0, 0);
    ctx.restore();
    Object.assign(canvas.dataset, {
      rows: String(rows),
      cols: String(cols),
      x0: String(geom.x0),
      y0: String(geom.y0),
      cw: String(geom.cw),
      ch: String(geom.ch),
      vmax: String(vmax),
      encoding: model.get("encoding"),
    });
    const b = boxes[i];
    b.head.textContent = panel.title;
    b.note.textContent = panel.note ?? "";
    b.lo.textContent = panel.legend ? panel.legend[0] : (-vmax).toPrecision(3);
    b.hi.textContent = panel.legend ? panel.legend[1] : vmax.toPrecision(3);
    b.scale.textContent = panel.scale_note ?? "";
    const lctx = b.legend.getContext("2d")!;
    b.legend.width = 140;
    b.legend.height = 12;
    for (let x = 0; x < 140; x++) {
      lctx.fillStyle = divergingCss(map, ((x / 139) * 2 - 1) * vmax, vmax);
      lctx.fillRect(x, 0, 1, 12);
    }
    return { panel, data: m.data, extra, geom, vmax };
  }

  function paint(): void {
    hideTooltip(tooltip); // what it said was about the old picture
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const meta = model.get("_meta");
    const panels = model.get("_payload")?.panels ?? [];
    caption.textContent = meta.caption ?? "";
    const enc = model.get("encoding");
    const label = ENCODINGS.find(([k]) => k === enc)?.[1] ?? enc;
    const which = enc === "learned" ? ` · ${meta.table_name}` : "";
    title.textContent = `Positional encodings · ${label}${which} · ${model.get("length")} positions`;
    root.dataset.encoding = enc;
    const side = fittedSide(t.name === "lecture", t.name === "lecture" ? 70 : 52);
    // A fitted note keeps at least 360 px: narrower, it wraps to more lines, the panels shrink to make room, and
    // the note narrows again (ALiBi's maps ended at 100 px beside a one-word-a-line note).
    for (const b of boxes) b.note.style.maxWidth = side ? `${Math.max(side + 70, 360)}px` : "420px";
    drawn = panels.slice(0, 2).map((p, i) => drawPanel(i, p, side));
  }

  for (const [i, b] of boxes.entries()) {
    cleanups.push(
      listen(b.canvas, "mousemove", (e: MouseEvent) => {
        const d = drawn[i];
        if (!d) return;
        const rect = b.canvas.getBoundingClientRect();
        const cell = panelCellAt(d.geom, e.clientX - rect.left, e.clientY - rect.top);
        if (!cell) {
          hideTooltip(tooltip);
          return;
        }
        const v = d.data[cell.row * d.geom.cols + cell.col];
        const p = d.panel;
        const extra = d.extra
          ? `\n${p.extra_name ?? "extra"} ${d.extra[cell.row * d.geom.cols + cell.col]}`
          : "";
        const shown = Number.isNaN(v) ? "masked" : v.toFixed(4);
        showTooltip(
          tooltip,
          root,
          e,
          `${p.rows} ${cell.row}, ${p.cols} ${cell.col + p.col_start}\n${p.value} ${shown}${extra}`,
          { value: String(v), panel: String(i) },
        );
      }),
      listen(b.canvas, "mouseleave", () => {
        hideTooltip(tooltip);
      }),
    );
  }

  const rebuild = () => {
    buildControls();
    paint();
  };
  for (const ev of ["change:encoding", "change:_meta", "change:n_heads", "change:head", "change:causal"])
    cleanups.push(onModel(model, ev, buildControls));
  for (const ev of ["change:length", "change:d_model", "change:similarity"])
    cleanups.push(onModel(model, ev, buildControls));
  cleanups.push(onModel(model, "change:_payload", paint));
  cleanups.push(onModel(model, "change:colormap", paint));
  cleanups.push(onModel(model, "change:theme", paint));
  rebuild();

  return shell.close;
}

export default { render };
