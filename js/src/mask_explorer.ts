// MaskExplorer: an attention mask as a query x key grid, and how MQA/GQA share key/value heads.
// Mirrors attnwidgets/widgets/mask_explorer.py. Python builds the mask (numpy, teaching kit) and sends it as a uint8
// buffer in `_payload.mask`; the page's menus, sliders and boxes set the Python traits, and Python sends the new mask back.

import { type Packed, decode } from "./shared/buffers";
import { categorical } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { prepareCanvas } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { type RenderProps, onModel, saveTraits } from "./shared/model";
import {
  type PanelGeometry,
  captionAndRow,
  divisors,
  formatBytes,
  panelCellAt,
  panelGeometry,
  parsePositions,
  slider,
  tickIndices,
} from "./shared/teaching";
import { applyTheme, theme } from "./shared/theme";
import { hideTooltip, showTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

/** Python traits of MaskExplorer (attnwidgets/widgets/mask_explorer.py). */
export interface MaskExplorerTraits {
  mask: string; // "full" | "causal" | "sliding_window" | "global_local"
  length: number;
  window: number;
  causal: boolean;
  global_tokens: number[];
  padding: number;
  n_heads: number;
  n_kv_heads: number;
  n_layers: number;
  head_dim: number;
  seq_len: number;
  bytes_per_value: number;
  theme: string;
  _payload: { mask: Packed }; // (length, length) uint8, 1 = may attend
  _meta: {
    caption: string;
    allowed: number;
    total: number;
    keys_min: number;
    keys_max: number;
    kv_heads: number[]; // kv head of every query head
    variant: string; // "MHA" | "GQA" | "MQA"
    cache: Record<string, number>; // variant -> bytes
    padding?: number; // the last `padding` positions are [PAD]
  };
  _error: string;
}

type Editable = Pick<
  MaskExplorerTraits,
  "mask" | "length" | "window" | "causal" | "global_tokens" | "padding" | "n_heads" | "n_kv_heads" | "seq_len"
>;

const MASKS: Array<[string, string]> = [
  ["full", "full (encoder)"],
  ["causal", "causal (decoder)"],
  ["sliding_window", "sliding window"],
  ["global_local", "global + local"],
];
const HEADS = [1, 2, 4, 8, 12, 16, 32, 64];
const SEQ = [512, 2048, 4096, 8192, 32768, 131072];

function render({ model, el }: RenderProps<MaskExplorerTraits>): () => void {
  const shell = widgetShell(model, el, "aw-mask-explorer", MASK_CSS);
  const { root, title, bar, errorBox, cleanups } = shell;
  const { caption, row } = captionAndRow(24);
  const canvas = h("canvas", { "data-testid": "mask-canvas" });
  const stats = h("div", { "data-testid": "mask-stats" });
  const left = h("div", {}, canvas, stats);
  const kvBar = h("div", { className: "aw-bar" });
  const kvCanvas = h("canvas", { "data-testid": "kv-canvas" });
  const kvText = h("div", { "data-testid": "kv-text" });
  const cacheRows = h("div", { "data-testid": "kv-cache" });
  const right = h(
    "div",
    {},
    h("div", { className: "aw-title", text: "Sharing key/value heads: MHA, GQA, MQA" }),
    kvBar,
    kvCanvas,
    kvText,
    cacheRows,
  );
  row.append(left, right);
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, caption, row, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let data: Float32Array = new Float32Array(0);
  let geom: PanelGeometry | null = null;

  const update = (changes: Partial<Editable>) => saveTraits(model, changes);

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const kind = model.get("mask");
    const n = model.get("length");
    const maskSel = select(MASKS, kind, "mask");
    maskSel.dataset.testid = "mask-select";
    controls.push(listen(maskSel, "change", () => update({ mask: maskSel.value })));
    bar.append(h("label", {}, "mask", maskSel));
    bar.append(
      slider(
        "length",
        { min: 2, max: Math.max(64, n), value: n, testid: "length-slider" },
        (v) =>
          update({
            length: v,
            window: Math.min(model.get("window"), v),
            padding: Math.min(model.get("padding"), v - 1),
          }),
        controls,
      ).wrap,
    );
    bar.append(
      slider(
        "padding",
        { min: 0, max: n - 1, value: Math.min(model.get("padding"), n - 1), testid: "padding-slider" },
        (v) => update({ padding: v }),
        controls,
      ).wrap,
    );
    if (kind === "sliding_window" || kind === "global_local") {
      bar.append(
        slider(
          "window w",
          { min: 1, max: n, value: Math.min(model.get("window"), n), testid: "window-slider" },
          (v) => update({ window: v }),
          controls,
        ).wrap,
      );
      const box = h("input", { type: "checkbox", "aria-label": "causal", "data-testid": "causal-box" });
      box.checked = model.get("causal");
      controls.push(listen(box, "change", () => update({ causal: box.checked })));
      bar.append(h("label", {}, box, "causal"));
    }
    if (kind === "global_local") {
      const input = h("input", {
        type: "text",
        size: 10,
        "aria-label": "global tokens",
        "data-testid": "global-input",
      });
      input.value = model.get("global_tokens").join(", ");
      controls.push(listen(input, "change", () => update({ global_tokens: parsePositions(input.value, n) })));
      bar.append(h("label", {}, "global tokens", input));
    }
    bar.append(shell.exportControls(controls));

    kvBar.replaceChildren();
    const nh = model.get("n_heads");
    const heads = select(
      HEADS.map((v) => [String(v), String(v)]),
      String(nh),
      "query heads",
    );
    heads.dataset.testid = "heads-select";
    controls.push(listen(heads, "change", () => update({ n_heads: Number(heads.value), n_kv_heads: 1 })));
    const kv = select(
      divisors(nh).map((v) => [String(v), String(v)]),
      String(model.get("n_kv_heads")),
      "key/value heads",
    );
    kv.dataset.testid = "kv-select";
    controls.push(listen(kv, "change", () => update({ n_kv_heads: Number(kv.value) })));
    const seq = select(
      SEQ.map((v) => [String(v), v.toLocaleString("en")]),
      String(model.get("seq_len")),
      "tokens cached",
    );
    seq.dataset.testid = "seq-select";
    controls.push(listen(seq, "change", () => update({ seq_len: Number(seq.value) })));
    kvBar.append(
      h("label", {}, "query heads", heads),
      h("label", {}, "kv heads", kv),
      h("label", {}, "tokens", seq),
    );
  }

  function paintMask(): void {
    const t = theme(model.get("theme"));
    const m = decode(model.get("_payload").mask);
    data = m.data;
    const n = m.shape[0];
    const big = t.name === "lecture";
    const pad = big ? 44 : 34;
    // Fitted: the mask beside the KV panel, as tall as the box leaves under the caption and above the stats.
    const room = fit.room(row);
    row.style.flexWrap = room ? "nowrap" : "wrap";
    right.style.flex = room ? "none" : ""; // the KV panel keeps its width; the mask takes what is left
    const gapX = Number.parseFloat(row.style.gap) || 0;
    const box = room
      ? Math.max(
          80,
          Math.min(
            big ? 460 : 340,
            room.width - right.getBoundingClientRect().width - gapX - pad - 8,
            room.height - stats.getBoundingClientRect().height - pad - 8,
          ),
        )
      : big
        ? 460
        : 340;
    const g = panelGeometry(n, n, box, box, pad, pad, big ? 44 : 30);
    geom = g;
    const width = Math.ceil(pad + g.w + 8);
    const height = Math.ceil(pad + g.h + 8);
    const ctx = prepareCanvas(canvas, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    const globals = new Set(model.get("mask") === "global_local" ? model.get("global_tokens") : []);
    const padFrom = n - (model.get("_meta").padding ?? 0); // rows and columns from here on are [PAD]
    const on = big ? "#0072b2" : "#2b6cb0";
    const viaGlobal = big ? "#e69f00" : "#dd8452";
    let allowed = 0;
    for (let q = 0; q < n; q++) {
      for (let k = 0; k < n; k++) {
        const ok = data[q * n + k] > 0.5;
        if (ok) allowed++;
        ctx.fillStyle = ok
          ? globals.has(q) || globals.has(k)
            ? viaGlobal
            : on
          : big
            ? "#f0f0f0"
            : "#f3f4f6";
        ctx.fillRect(
          g.x0 + k * g.cw,
          g.y0 + q * g.ch,
          Math.max(g.cw - (g.cw > 6 ? 1 : 0), 0.5),
          g.ch - (g.ch > 6 ? 1 : 0),
        );
      }
    }
    if (padFrom < n) {
      // [PAD] query rows are computed and thrown away: hatch them; label the padded key columns
      ctx.save();
      ctx.beginPath();
      ctx.rect(g.x0, g.y0 + padFrom * g.ch, g.w, (n - padFrom) * g.ch);
      ctx.clip();
      ctx.strokeStyle = t.bg;
      ctx.lineWidth = big ? 3 : 2;
      for (let x = -g.h; x < g.w; x += big ? 10 : 8) {
        ctx.beginPath();
        ctx.moveTo(g.x0 + x, g.y0 + g.h);
        ctx.lineTo(g.x0 + x + g.h, g.y0);
        ctx.stroke();
      }
      ctx.restore();
      ctx.strokeStyle = big ? "#d55e00" : "#c05621";
      ctx.lineWidth = 2;
      ctx.strokeRect(g.x0 + padFrom * g.cw, g.y0, (n - padFrom) * g.cw, g.h);
    }
    const font = big ? 16 : 11;
    ctx.font = `${font}px ${t.fontFamily}`;
    ctx.fillStyle = t.fg;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const i of tickIndices(n, 6)) ctx.fillText(String(i), g.x0 - 4, g.y0 + (i + 0.5) * g.ch);
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    for (const i of tickIndices(n, 6)) ctx.fillText(String(i), g.x0 + (i + 0.5) * g.cw, g.y0 - 3);
    ctx.fillStyle = t.muted;
    ctx.fillText("key j →", g.x0 + g.w / 2, g.y0 - font - 5);
    ctx.save();
    ctx.translate(font / 2 + 1, g.y0 + g.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText("query i →", 0, 0);
    ctx.restore();
    Object.assign(canvas.dataset, {
      n: String(n),
      x0: String(g.x0),
      y0: String(g.y0),
      cw: String(g.cw),
      ch: String(g.ch),
      allowed: String(allowed),
      mask: model.get("mask"),
      padding: String(n - padFrom),
    });
    const meta = model.get("_meta");
    const share = meta.total ? (100 * meta.allowed) / meta.total : 0;
    stats.textContent =
      `${meta.allowed} of ${meta.total} query–key pairs computed (${share.toFixed(0)} %); ` +
      `each query sees ${meta.keys_min === meta.keys_max ? meta.keys_max : `${meta.keys_min}–${meta.keys_max}`} keys`;
    if (globals.size) stats.textContent += "; blue: the local window, orange: through a global token";
    if (padFrom < n)
      stats.textContent += `; keys ${padFrom}–${n - 1} are [PAD] (outlined): weight 0 for every query`;
    caption.textContent = meta.caption;
    const label = MASKS.find(([k]) => k === model.get("mask"))?.[1] ?? model.get("mask");
    const w = model.get("mask") === "sliding_window" || model.get("mask") === "global_local";
    title.textContent = `Attention masks · ${label}${w ? ` · w = ${model.get("window")}` : ""} · ${n} tokens`;
    root.dataset.mask = model.get("mask");
  }

  function paintKv(): void {
    const t = theme(model.get("theme"));
    const meta = model.get("_meta");
    const map = meta.kv_heads ?? [];
    const nh = map.length;
    const nkv = model.get("n_kv_heads");
    const big = t.name === "lecture";
    const size = big ? 22 : 14;
    const gap = Math.max(3, Math.min(big ? 14 : 10, (big ? 560 : 420) / Math.max(nh, 1) - size));
    const width = Math.max(big ? 420 : 320, 2 * size + 12 + nh * (size + gap));
    const height = big ? 170 : 130;
    right.style.width = fit.on() ? `${width}px` : ""; // fitted: the KV panel's text wraps to its drawing's width
    const ctx = prepareCanvas(kvCanvas, width, height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, width, height);
    const font = big ? 15 : 11;
    ctx.font = `${font}px ${t.fontFamily}`;
    const qY = font + 8;
    const kvY = height - size - font - 8;
    const base = size + 6; // room for the first kv box, which is twice as wide as a query box
    const qX = (i: number) => base + i * (size + gap);
    const span = nh * (size + gap) - gap;
    const kvStep = nkv > 1 ? (span - size) / (nkv - 1) : 0;
    const kvX = (j: number) => (nkv > 1 ? base + j * kvStep : base + (span - size) / 2);
    ctx.lineWidth = big ? 2 : 1.2;
    for (let i = 0; i < nh; i++) {
      ctx.strokeStyle = categorical(map[i]);
      ctx.beginPath();
      ctx.moveTo(qX(i), qY + size);
      ctx.lineTo(kvX(map[i]), kvY);
      ctx.stroke();
    }
    for (let i = 0; i < nh; i++) {
      ctx.fillStyle = categorical(map[i]);
      ctx.fillRect(qX(i) - size / 2, qY, size, size);
    }
    for (let j = 0; j < nkv; j++) {
      ctx.fillStyle = categorical(j);
      ctx.fillRect(kvX(j) - size, kvY, size * 2, size);
    }
    ctx.fillStyle = t.fg;
    ctx.textAlign = "left";
    ctx.textBaseline = "bottom";
    ctx.fillText(`${nh} query heads (each has its own Q)`, 6, qY - 3);
    ctx.textBaseline = "top";
    ctx.fillText(`${nkv} key/value head${nkv === 1 ? "" : "s"} (K and V, cached)`, 6, kvY + size + 4);
    Object.assign(kvCanvas.dataset, { nHeads: String(nh), nKvHeads: String(nkv), variant: meta.variant });
    const group = nh / Math.max(nkv, 1);
    kvText.textContent =
      `${meta.variant}: ${nkv === nh ? "every query head has its own K/V" : `${group} query heads share each K/V head`}. ` +
      `KV cache for ${model.get("n_layers")} layers × ${model.get("head_dim")} dims × ` +
      `${model.get("seq_len").toLocaleString("en")} tokens at ${model.get("bytes_per_value")} bytes:`;
    cacheRows.replaceChildren();
    const most = Math.max(...Object.values(meta.cache ?? {}), 1);
    for (const name of ["MHA", "GQA", "MQA"]) {
      const bytes = meta.cache?.[name] ?? 0;
      const fill = h("div", {});
      fill.style.height = `${font}px`;
      fill.style.width = `${Math.max(2, (bytes / most) * 220)}px`;
      fill.style.background = name === meta.variant ? t.accent : "#a0a7b0";
      const line = h(
        "div",
        { "data-testid": `cache-${name}` },
        h("span", { text: name === "GQA" ? `GQA (${nkv})` : name }),
        fill,
        h("span", { text: formatBytes(bytes) }),
      );
      line.style.display = "grid";
      line.style.gridTemplateColumns = big ? "110px 240px auto" : "80px 230px auto";
      line.style.alignItems = "center";
      line.style.gap = "6px";
      cacheRows.append(line);
    }
  }

  function paint(): void {
    hideTooltip(tooltip); // what it said was about the old picture
    applyTheme(root, theme(model.get("theme")));
    paintKv(); // first: the mask takes the width the KV panel leaves
    paintMask();
  }

  cleanups.push(
    listen(canvas, "mousemove", (e: MouseEvent) => {
      if (!geom) return;
      const rect = canvas.getBoundingClientRect();
      const cell = panelCellAt(geom, e.clientX - rect.left, e.clientY - rect.top);
      if (!cell) {
        hideTooltip(tooltip);
        return;
      }
      const n = geom.cols;
      const ok = data[cell.row * n + cell.col] > 0.5;
      const padFrom = n - (model.get("_meta").padding ?? 0);
      const padNote =
        cell.col >= padFrom
          ? `\nkey ${cell.col} is [PAD]: masked for every query`
          : cell.row >= padFrom
            ? `\nquery ${cell.row} is [PAD]: computed, then thrown away`
            : "";
      const seen: number[] = [];
      for (let k = 0; k < n; k++) if (data[cell.row * n + k] > 0.5) seen.push(k);
      showTooltip(
        tooltip,
        root,
        e,
        `query ${cell.row} → key ${cell.col}: ${ok ? "attends" : "masked"}\n` +
          `query ${cell.row} sees ${seen.length} key${seen.length === 1 ? "" : "s"}${padNote}`,
        { allowed: String(ok) },
      );
    }),
    listen(canvas, "mouseleave", () => {
      hideTooltip(tooltip);
    }),
  );

  for (const ev of [
    "mask",
    "length",
    "window",
    "causal",
    "global_tokens",
    "padding",
    "n_heads",
    "n_kv_heads",
    "seq_len",
  ])
    cleanups.push(onModel(model, `change:${ev}`, buildControls));
  cleanups.push(onModel(model, "change:_payload", paint));
  cleanups.push(onModel(model, "change:_meta", paint));
  cleanups.push(onModel(model, "change:theme", paint));
  buildControls();
  paint();

  return shell.close;
}

/** Fitted (shared/fit.ts): the KV panel's text a step smaller, so the panel is not taller than the mask. */
const MASK_CSS = `
.aw-fit [data-testid=kv-text], .aw-fit [data-testid=kv-cache] { font-size: calc(var(--aw-font) * 0.8); }
.aw-fit .aw-title { font-size: calc(var(--aw-font) * 1); }
`;

export default { render };
