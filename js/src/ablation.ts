// AblationWidget: a layers x heads grid of toggles, a scale slider and a mode menu that re-run the model in the
// kernel, and a panel with the watched numbers before/after and the selected head's map before/after.
// Mirrors attnwidgets/widgets/ablation.py. A change made here goes up as one "apply" message and comes back as one
// state update (ablation, mode, _payload with the message's seq, _error): the page draws only from model state. One
// message is unanswered at a time: changes made meanwhile only update the page's latest state, sent when the update
// arrives, so the kernel never gets a backlog.

import {
  type AblationDict,
  barRange,
  barSpan,
  canonical,
  cellText,
  formatDelta,
  formatValue,
  headState,
  sameAblation,
  setScale,
  sliderValue,
  toggleHead,
  toggleLayer,
  withMode,
} from "./shared/ablation_state";
import { type Packed, decode, maxOf } from "./shared/buffers";
import type { ColorMapName } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { drawLabels, drawMatrix, labelRoom, prepareCanvas, textMeasurer } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { fitZoom } from "./shared/fit_views";
import { kvGroups } from "./shared/heads";
import { heatmapLayout } from "./shared/layout";
import { type RenderProps, onModel } from "./shared/model";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { widgetShell } from "./shared/widget_shell";

export interface OutputRow {
  item: string;
  label: string; // what the item is (the texts of a pair, a candidate, ...)
  name: string; // "cosine", a token, a class, ...
  before: number | null;
  after: number | null;
  delta: number | null;
}

/** Python traits of AblationWidget (attnwidgets/widgets/ablation.py). */
export interface AblationTraits {
  ablation: AblationDict; // Python holds an Ablation; it syncs as its dict form
  mode: string; // "zero" | "uniform" | "mean"
  kind: string; // the attention stack: "self", or "encoder" / "decoder" / "cross"
  layer: number;
  head: number;
  item: number;
  colormap: string; // "" = the theme's
  theme: string;
  fit: "auto" | boolean | number[]; // shared/fit.ts
  _payload: Payload;
  _running: boolean;
  _error: string;
}

/** What the page draws, all of it computed in Python (AblationWidget._payload). */
export interface Payload {
  title: string;
  watch: string; // what is watched, in words
  stacks: Record<string, [number, number]>; // [layers, heads] per stack
  kv_heads?: Record<string, number>; // GQA: key/value heads per stack (absent or 0: none shared)
  items: string[]; // a short label per text
  output: string; // the watched kind: "pairs", "ranking", ...
  rows: OutputRow[];
  seconds: number;
  ablation: AblationDict; // the ablation the rows belong to
  seq: number; // the last "apply" message answered
  map: { key: string; queries: string[]; keys: string[]; before: Packed; after: Packed };
}

export const DEBOUNCE_MS = 150;

const CSS = `
.aw-ablation .aw-abl-body { display: flex; gap: 18px; align-items: flex-start; flex-wrap: wrap; }
.aw-abl-grid { display: grid; gap: 2px; align-items: center; }
.aw-abl-grid .aw-abl-colhead { text-align: center; color: var(--aw-muted); font-size: .85em; }
.aw-abl-cell { width: calc(var(--aw-font) * 2.1); height: calc(var(--aw-font) * 1.7); padding: 0;
  border: 1px solid var(--aw-abl-line); border-radius: 3px; background: var(--aw-abl-on); color: #fff;
  font: inherit; font-size: .8em; font-weight: 600; cursor: pointer; }
.aw-abl-cell:disabled { cursor: not-allowed; }
.aw-abl-kv { text-align: center; color: var(--aw-muted); font-size: .8em; border-bottom: 2px solid var(--aw-muted);
  white-space: nowrap; }
.aw-abl-cell.aw-selected { outline: 2px solid var(--aw-accent); outline-offset: 1px; }
.aw-ablation select, .aw-ablation button, .aw-ablation input { font: inherit; }
.aw-abl-layer { font: inherit; font-size: .85em; padding: 1px 6px; min-width: 8.5ch; text-align: left; border: 1px solid var(--aw-abl-line);
  border-radius: 3px; background: var(--aw-bg); color: var(--aw-fg); cursor: pointer; white-space: nowrap; }
.aw-abl-layer[aria-pressed=true] { background: var(--aw-abl-off); color: #fff; }
.aw-abl-select { display: flex; gap: 8px; align-items: center; margin-top: 8px; flex-wrap: wrap; }
.aw-abl-select input[type=range] { width: 160px; }
.aw-abl-hint { color: var(--aw-muted); font-size: .85em; margin-top: 4px; max-width: 420px; }
.aw-abl-panel { min-width: 320px; }
.aw-abl-panel h4 { margin: 0 0 4px; font-size: 1em; }
.aw-abl-group { margin: 6px 0 2px; color: var(--aw-muted); font-size: .9em; max-width: 520px; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }
.aw-abl-row { display: grid; grid-template-columns: minmax(60px, max-content) 180px max-content; gap: 8px;
  align-items: center; }
.aw-abl-track { position: relative; height: calc(var(--aw-font) * 1.4); background: var(--aw-abl-track);
  border-radius: 2px; }
.aw-abl-bar { position: absolute; height: 45%; }
.aw-abl-bar.aw-before { top: 5%; background: var(--aw-abl-before); }
.aw-abl-bar.aw-after { bottom: 5%; background: var(--aw-abl-after); }
.aw-abl-zero { position: absolute; top: 0; bottom: 0; width: 1px; background: var(--aw-muted); }
.aw-abl-nums { font-variant-numeric: tabular-nums; white-space: nowrap; }
.aw-abl-up { color: #1a7f37; } .aw-abl-down { color: #cf222e; }
.aw-abl-key { display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 8px; vertical-align: -1px; }
.aw-abl-maps { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 10px; }
.aw-abl-maps figure { margin: 0; }
.aw-abl-maps figcaption { color: var(--aw-muted); font-size: .9em; }
.aw-abl-status[data-state=running] { color: var(--aw-accent); }
.aw-ablation.aw-fit .aw-abl-body { flex-wrap: nowrap; gap: 14px; }
.aw-ablation.aw-fit .aw-abl-cell { width: calc(var(--aw-font) * 1.3); height: calc(var(--aw-font) * 1.2);
  font-size: .65em; }
.aw-ablation.aw-fit .aw-abl-layer { min-width: 0; font-size: .7em; padding: 0 4px; }
.aw-ablation.aw-fit .aw-abl-colhead { font-size: .65em; }
.aw-ablation.aw-fit .aw-abl-hint { max-width: 340px; font-size: .75em; }
.aw-ablation.aw-fit .aw-abl-select input[type=range] { width: 110px; }
.aw-ablation.aw-fit .aw-abl-panel { min-width: 0; }
.aw-ablation.aw-fit .aw-abl-row { grid-template-columns: minmax(50px, max-content) 120px max-content; }
.aw-ablation.aw-fit .aw-abl-maps { flex-wrap: nowrap; }
`;

let seqCounter = 0;
/** Increasing across every view in the page, and above any seq already answered, so the kernel can drop an older
 * message (two views of one widget) and never drops this page's newest. */
function nextSeq(answered: number): number {
  seqCounter = (seqCounter + 1) % 1000;
  return Math.max(Date.now() * 1000 + seqCounter, answered + 1);
}

function render({ model, el }: RenderProps<AblationTraits>): () => void {
  const shell = widgetShell(model, el, "aw-ablation", CSS);
  const { root, title, bar, errorBox, cleanups } = shell;
  errorBox.dataset.testid = "error";

  const grid = h("div", { className: "aw-abl-grid", "data-testid": "grid" });
  const slider = h("input", {
    type: "range",
    min: 0,
    max: 1,
    step: 0.05,
    "aria-label": "scale of the selected head",
    "data-testid": "scale-slider",
  });
  const sliderText = h("span", { className: "aw-abl-nums", "data-testid": "scale-value" });
  const selectedText = h("span", { "data-testid": "selected" });
  const status = h("span", {
    className: "aw-abl-status aw-muted",
    "data-testid": "status",
    "aria-live": "polite",
  });
  const output = h("div", { "data-testid": "output" });
  const watchText = h("h4");
  const itemSel = h("span");
  const mapBefore = h("canvas", { "data-testid": "map-before" });
  const mapAfter = h("canvas", { "data-testid": "map-after" });
  const mapTitle = h("span");
  const modeSel = select(
    [
      ["zero", "zero (output removed)"],
      ["uniform", "uniform attention"],
      ["mean", "mean pattern"],
    ],
    model.get("mode"),
    "how a disabled head is replaced",
  );
  modeSel.dataset.testid = "mode-select";
  const reset = h("button", { type: "button", text: "reset", "data-testid": "reset" });
  const stackBox = h("span");
  bar.append(h("label", {}, "disable by", modeSel), stackBox, reset, status);
  const legend = h(
    "div",
    { className: "aw-muted" },
    h("span", { className: "aw-abl-key", style: "background: var(--aw-abl-before)" }),
    "before",
    h("span", { className: "aw-abl-key", style: "background: var(--aw-abl-after)" }),
    "after",
  );
  root.append(
    title,
    bar,
    errorBox,
    h(
      "div",
      { className: "aw-abl-body" },
      h(
        "div",
        {},
        grid,
        h("div", { className: "aw-abl-select" }, selectedText, h("label", {}, "scale", slider), sliderText),
        h("div", {
          className: "aw-abl-hint",
          text: "Click a head to disable it or enable it again; a layer button disables the whole row. × zero · U uniform · M mean · .50 scaled.",
        }),
      ),
      h(
        "div",
        { className: "aw-abl-panel" },
        watchText,
        legend,
        output,
        h("div", { className: "aw-abl-maps" }, mapTitle, itemSel),
        h(
          "div",
          { className: "aw-abl-maps" },
          h("figure", {}, mapBefore, h("figcaption", { text: "before" })),
          h("figure", {}, mapAfter, h("figcaption", { text: "after ablation" })),
        ),
      ),
    ),
  );

  // What the page shows; the kernel catches up one message at a time. `sent` is the seq of the unanswered "apply"
  // message (0: none): the state update whose _payload.seq reaches it answers it, with the state Python kept.
  let want: AblationDict = canonical(model.get("ablation"));
  let mode = model.get("mode");
  let sent = 0;
  let sentAt = 0;
  let dirty = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let roundtrip = Number.NaN;

  const payload = () => model.get("_payload");
  const stackShape = (): [number, number] => payload().stacks?.[model.get("kind")] ?? [0, 0];
  const idle = () => sent === 0 && !dirty && timer === undefined;

  function setStatus(): void {
    const running = !idle() || model.get("_running");
    status.dataset.state = running ? "running" : model.get("_error") ? "error" : "idle";
    status.dataset.roundtrip = String(roundtrip);
    const out = payload();
    output.style.opacity = status.dataset.state === "error" ? "0.45" : "";
    if (running) status.textContent = "running…";
    else if (status.dataset.state === "error")
      status.textContent = "failed: the numbers below are the last good run";
    else if (out && typeof out.seconds === "number") {
      const rt = Number.isNaN(roundtrip) ? "" : `round trip ${Math.round(roundtrip)} ms · `;
      status.textContent = `${rt}model ${Math.round(out.seconds * 1000)} ms`;
    } else status.textContent = "";
  }

  function change(next: AblationDict, delay: number): void {
    want = canonical(next);
    drawGrid();
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (sent) dirty = true;
      else send();
    }, delay);
    setStatus();
  }

  function send(): void {
    dirty = false;
    sent = nextSeq(payload()?.seq ?? 0);
    sentAt = performance.now();
    model.send({ type: "apply", seq: sent, ablation: want, mode });
    setStatus();
  }

  /** A state update arrived: if it answers the message in flight, send the latest change or take Python's state. */
  function answered(): void {
    if (!sent || (payload()?.seq ?? 0) < sent) return;
    roundtrip = performance.now() - sentAt;
    sent = 0;
    if (dirty) send();
    else if (timer === undefined) {
      want = canonical(model.get("ablation"));
      mode = model.get("mode");
    }
    drawGrid();
  }

  function select1(changes: Partial<Pick<AblationTraits, "layer" | "head" | "item" | "kind">>): void {
    for (const [k, v] of Object.entries(changes)) model.set(k as keyof AblationTraits, v as never);
    model.save_changes();
    drawGrid();
  }

  const barListeners = controlGroup(cleanups);
  let barKey = "";
  function buildBar(): void {
    const key = JSON.stringify([payload().stacks, payload().items, model.get("kind"), model.get("item")]);
    if (key === barKey) return; // the menus are as they are: rebuilding them would take a menu away while in use
    barKey = key;
    const stacks = Object.keys(payload().stacks ?? {});
    resetControls(barListeners, stackBox);
    if (stacks.length > 1) {
      const s = select(
        stacks.map((k) => [k, k]),
        model.get("kind"),
        "attention stack",
      );
      barListeners.push(listen(s, "change", () => select1({ kind: s.value })));
      stackBox.append(h("label", {}, "attention", s));
    }
    const items = payload().items ?? [];
    itemSel.replaceChildren();
    if (items.length > 1) {
      const s = select(
        items.map((t, i) => [String(i), `${i}: ${userText(t)}`]),
        String(model.get("item")),
        "text shown",
      );
      s.dataset.testid = "item-select";
      barListeners.push(listen(s, "change", () => select1({ item: Number(s.value) })));
      itemSel.append(h("label", {}, "text", s));
    }
  }

  // The grid is rebuilt only when its shape changes; cells are restyled in place.
  let gridShape = "";
  const cells: HTMLButtonElement[][] = [];
  const layerButtons: HTMLButtonElement[] = [];

  const gridListeners = controlGroup(cleanups);
  function buildGrid(): void {
    const [nLayers, nHeads] = stackShape();
    gridShape = `${model.get("kind")}/${nLayers}x${nHeads}`;
    resetControls(gridListeners, grid);
    cells.length = 0;
    layerButtons.length = 0;
    grid.style.gridTemplateColumns = `max-content repeat(${nHeads}, max-content)`;
    // GQA: heads that read one key/value head are grouped under a "KV head g" caption, with a gap between groups.
    const groups = kvGroups(nHeads, payload().kv_heads?.[model.get("kind")] ?? 0);
    const size = groups ? groups[0].length : nHeads;
    const kvOf = (hd: number) => Math.floor(hd / size);
    const groupStart = (hd: number) => groups !== null && hd > 0 && hd % size === 0;
    if (groups) {
      grid.append(h("span", {}));
      for (const [g, heads] of groups.entries()) {
        const cap = h("span", {
          className: "aw-abl-kv",
          "data-testid": "kv-group",
          "data-kv": g,
          title: `KV head ${g}: query heads ${heads[0]}–${heads[heads.length - 1]} share its keys and values`,
          text: `KV head ${g}`,
        });
        cap.style.gridColumn = `span ${heads.length}`;
        if (g > 0) cap.style.marginLeft = "8px";
        grid.append(cap);
      }
    }
    grid.append(h("span", { className: "aw-abl-colhead", text: "head" }));
    for (let hd = 0; hd < nHeads; hd++) {
      const col = h("span", { className: "aw-abl-colhead", text: String(hd) });
      if (groupStart(hd)) col.style.marginLeft = "8px";
      grid.append(col);
    }
    for (let l = 0; l < nLayers; l++) {
      const lb = h("button", { type: "button", className: "aw-abl-layer", "data-testid": `layer-${l}` });
      gridListeners.push(listen(lb, "click", () => change(toggleLayer(want, model.get("kind"), l, mode), 0)));
      layerButtons.push(lb);
      grid.append(lb);
      const row: HTMLButtonElement[] = [];
      for (let hd = 0; hd < nHeads; hd++) {
        const c = h("button", { type: "button", className: "aw-abl-cell", "data-testid": `cell-${l}-${hd}` });
        if (groups) c.dataset.kv = String(kvOf(hd));
        if (groupStart(hd)) c.style.marginLeft = "8px";
        gridListeners.push(
          listen(c, "click", () => {
            select1({ layer: l, head: hd });
            change(toggleHead(want, model.get("kind"), l, hd, mode), 0);
          }),
        );
        row.push(c);
        grid.append(c);
      }
      cells.push(row);
    }
  }

  function drawGrid(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const lecture = t.name === "lecture";
    root.style.setProperty("--aw-abl-on", lecture ? "#0072b2" : "#6baed6");
    root.style.setProperty("--aw-abl-off", lecture ? "#000000" : "#3d4450");
    root.style.setProperty("--aw-abl-line", t.grid);
    root.style.setProperty("--aw-abl-track", lecture ? "#eeeeee" : "#f3f4f6");
    root.style.setProperty("--aw-abl-before", lecture ? "#999999" : "#b6bcc4");
    root.style.setProperty("--aw-abl-after", lecture ? "#d55e00" : "#2f81f7");
    const [nLayers, nHeads] = stackShape();
    if (gridShape !== `${model.get("kind")}/${nLayers}x${nHeads}`) buildGrid();
    const stack = model.get("kind");
    const layer = model.get("layer");
    const head = model.get("head");
    for (let l = 0; l < nLayers; l++) {
      const lb = layerButtons[l];
      const off = headState(want, stack, l, 0).layerOff;
      lb.textContent = `layer ${l}${off ? " off" : ""}`;
      lb.setAttribute("aria-pressed", String(off));
      lb.title = off ? `enable layer ${l} again` : `disable every head of layer ${l} (${mode})`;
      for (let hd = 0; hd < nHeads; hd++) {
        const c = cells[l][hd];
        const s = headState(want, stack, l, hd);
        const pct = Math.round(s.scale * 100);
        c.style.background =
          pct >= 100
            ? "var(--aw-abl-on)"
            : pct <= 0
              ? "var(--aw-abl-off)"
              : `linear-gradient(to top, var(--aw-abl-on) ${pct}%, var(--aw-abl-off) ${pct}%)`;
        c.textContent = s.layerOff ? "" : cellText(s);
        c.disabled = s.layerOff;
        c.classList.toggle("aw-selected", l === layer && hd === head);
        c.dataset.state = s.layerOff ? "layer-off" : s.mode ? s.mode : "on";
        c.setAttribute("aria-pressed", String(s.mode !== null));
        c.setAttribute("aria-label", `layer ${l} head ${hd}`);
        const kv = c.dataset.kv !== undefined ? ` · KV head ${c.dataset.kv}` : "";
        c.title = s.layerOff
          ? `layer ${l} is disabled: enable the layer to edit head ${hd}`
          : `layer ${l} · head ${hd}${kv}: ${s.mode === null ? "on (click to disable)" : s.mode === "scale" ? `scaled ×${s.scale}` : `disabled (${s.mode}); click to enable`}`;
      }
    }
    modeSel.value = mode;
    reset.disabled = want.edits.length === 0;
    selectedText.textContent = `layer ${layer} · head ${head}`;
    const v = sliderValue(want, stack, layer, head);
    if (document.activeElement !== slider) slider.value = String(v);
    sliderText.textContent = `×${Number(slider.value).toFixed(2)}`;
    slider.disabled = headState(want, stack, layer, head).layerOff;
    setStatus();
  }

  function drawOutput(): void {
    const out = payload();
    title.textContent = `${userText(out.title ?? "")} · ablation`;
    watchText.textContent = `watching: ${userText(out.watch ?? "")}`;
    output.replaceChildren();
    if (!out || !out.rows) return;
    const ranges = new Map<string, [number, number]>();
    for (const name of new Set(out.rows.map((r) => r.name)))
      ranges.set(name, barRange(out.rows.filter((r) => r.name === name).flatMap((r) => [r.before, r.after])));
    let group = "";
    for (const r of out.rows) {
      if (r.item !== group) {
        group = r.item;
        output.append(
          h("div", {
            className: "aw-abl-group",
            text: userText(r.label || r.item),
            title: userText(r.label || r.item),
          }),
        );
      }
      const [lo, hi] = ranges.get(r.name) ?? [0, 1];
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
      const d = r.delta ?? 0;
      const nums = h(
        "span",
        { className: "aw-abl-nums" },
        h("span", { text: formatValue(r.before), "data-testid": "out-before" }),
        " → ",
        h("span", { text: formatValue(r.after), "data-testid": "out-after" }),
        " ",
        h("span", {
          text: formatDelta(r.delta),
          "data-testid": "out-delta",
          className: Math.abs(d) < 5e-5 ? "aw-muted" : d > 0 ? "aw-abl-up" : "aw-abl-down",
        }),
      );
      const row = h(
        "div",
        { className: "aw-abl-row", "data-testid": "out-row" },
        h("span", { text: userText(r.name) }),
        track,
        nums,
      );
      Object.assign(row.dataset, {
        item: r.item,
        name: r.name,
        before: String(r.before),
        after: String(r.after),
      });
      output.append(row);
    }
    output.dataset.seq = String(out.seq);
    output.dataset.ablation = JSON.stringify(canonical(out.ablation ?? { edits: [] }));
  }

  function drawMaps(): void {
    const hm = payload().map;
    if (!hm || !hm.before) return;
    const t = theme(model.get("theme"));
    const colormap = (model.get("colormap") || t.colormap) as ColorMapName;
    const before = decode(hm.before);
    const after = decode(hm.after);
    const vmax = Math.max(maxOf(before.data), maxOf(after.data)) || 1;
    const [nq, nk] = before.shape;
    const probe = textMeasurer();
    const small = { ...t, font: Math.max(9, t.font - 2) };
    const l = heatmapLayout({
      nq,
      nk,
      // fitted, the grid and the maps stand side by side (CSS above), so the maps are small enough to sit in a row
      // beside the head grid: the explorer then needs little or no zoom, and its text stays projector-sized
      maxGrid: fit.on() ? 140 : t.name === "lecture" ? 340 : 240,
      maxCell: fit.on() ? 12 : t.name === "lecture" ? 26 : 18,
      labelWidth: labelRoom(probe, hm.queries, small, 90),
      labelHeight: labelRoom(probe, hm.keys, small, 90),
      minLabelCell: 8,
    });
    for (const [canvas, m] of [
      [mapBefore, before],
      [mapAfter, after],
    ] as const) {
      const ctx = prepareCanvas(canvas, l.width, l.height);
      ctx.fillStyle = t.bg;
      ctx.fillRect(0, 0, l.width, l.height);
      drawMatrix(ctx, m.data, nq, nk, l.x0, l.y0, l.cell * nk, l.cell * nq, vmax, colormap);
      drawLabels(ctx, l, hm.queries, hm.keys, small);
      canvas.dataset.key = hm.key;
      canvas.dataset.max = String(maxOf(m.data));
      canvas.dataset.sum = String(m.data.reduce((a, b) => a + b, 0));
    }
    const stack = model.get("kind");
    mapTitle.textContent = `${stack === "self" ? "" : `${stack} · `}layer ${model.get("layer")} · head ${model.get("head")}, same colour scale (max ${vmax.toFixed(3)})`;
  }

  cleanups.push(
    listen(modeSel, "change", () => {
      mode = modeSel.value;
      change(withMode(want, mode), 0);
    }),
    listen(reset, "click", () => change({ edits: [] }, 0)),
    listen(slider, "input", () => {
      sliderText.textContent = `×${Number(slider.value).toFixed(2)}`;
      change(
        setScale(want, model.get("kind"), model.get("layer"), model.get("head"), Number(slider.value)),
        DEBOUNCE_MS,
      );
    }),
  );

  const on = (ev: string, fn: () => void) => cleanups.push(onModel(model, ev, fn));
  on("change:ablation", () => {
    if (idle() && !sameAblation(want, model.get("ablation"))) {
      want = canonical(model.get("ablation"));
      drawGrid();
    }
  });
  on("change:mode", () => {
    if (idle()) {
      mode = model.get("mode");
      drawGrid();
    }
  });
  on("change:layer", drawGrid);
  on("change:head", drawGrid);
  on("change:kind", () => {
    buildBar();
    drawGrid();
  });
  on("change:item", buildBar);
  on("change:_payload", () => {
    buildBar();
    answered();
    drawGrid();
    drawOutput();
    drawMaps();
    setStatus();
  });
  on("change:_running", setStatus);
  on("change:_error", setStatus); // the shell's error box shows it
  on("change:theme", () => {
    drawGrid();
    drawMaps();
  });
  on("change:colormap", drawMaps);

  // Fit to screen: the explorer is many HTML parts (head buttons, rows, two maps) that do not size themselves, so a
  // fitted explorer is zoomed as a whole (never below fitZoom's minimum) to lie inside the box, legend included.
  let zoomFrame = 0;
  const fitToBox = () => {
    root.style.zoom = "";
    const box = fit.box();
    const z = box ? fitZoom(root.getBoundingClientRect(), { width: box.width - 12, height: box.height }) : 1;
    root.style.zoom = z < 1 ? String(z) : "";
    root.dataset.zoom = String(z);
  };
  const refit = () => {
    cancelAnimationFrame(zoomFrame);
    zoomFrame = requestAnimationFrame(fitToBox);
  };
  const fit = fitWatcher(model, el, root, refit);
  cleanups.push(fit.cleanup, () => cancelAnimationFrame(zoomFrame));
  on("change:_payload", refit);
  on("change:theme", refit);

  buildBar();
  drawGrid();
  drawOutput();
  drawMaps();
  refit();

  return () => {
    if (timer !== undefined) clearTimeout(timer);
    shell.close();
  };
}

export default { render };
