// HeadView: bertviz's line view on a canvas. Query tokens left, key tokens right, one line per (head, query, key)
// with opacity = weight and one colour per head. Mirrors attnwidgets/widgets/head_view.py. One layer crosses at a
// time, as sparse rows of the weights >= min_weight (shared/lines.ts), fetched by "layer" request when chosen and
// kept in the page.
//
// At 512 tokens a layer has 12 x 512 x 512 = 3 million possible lines. We draw lines lighter than `min_weight`
// never, and when there are more than 128 tokens and nothing is hovered or selected only lines of weight >= 0.1;
// lines are batched into one path per (head, opacity step), so a redraw is a few hundred strokes.
//
// A long input (more than 512 tokens, or a lazy result: `_meta.long`) is drawn a `window` at a time: the payload
// holds the window's query rows, its keys and a few "far" keys outside it (attnwidgets/viewdata/windows.py), with a
// `window` description saying which token each row and column is. The ◀ ▶ buttons (Page Up / Page Down) move it.
// Heads that share a key/value head (GQA: `_meta.n_kv_heads` < heads) are outlined together in the swatch bar.

import { categorical, hexToRgb, readableOn } from "./shared/colors";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { fitToken, labelRoom, prepareCanvas, textMeasurer } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { kvGroups } from "./shared/heads";
import { type LinePayload, type LineRows, forEachLine, payloadFromReply, toRows } from "./shared/lines";
import { type RenderProps, onModel, saveTraits } from "./shared/model";
import { Requester } from "./shared/requests";
import { typedInControl } from "./shared/selection";
import { nextSpan } from "./shared/span";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { scrolledCanvas, widgetShell } from "./shared/widget_shell";

/** Python traits of HeadView (attnwidgets/widgets/head_view.py). */
export interface HeadViewTraits {
  layer: number;
  head: number; // -1: every head (Python keeps it in step with `heads`)
  heads: number[];
  kind: string; // "self" | "encoder" | "decoder" | "cross"
  words: boolean;
  sentence_filter: string; // "all" | "AA" | "AB" | "BA" | "BB"
  selected: number[]; // query positions
  window: number[]; // [start, stop]: the query positions drawn (keys too, for self-attention)
  min_weight: number;
  theme: string;
  _meta: {
    title: string;
    kinds: string[];
    shapes: Record<string, [number, number]>;
    tokens: Record<string, [string[], string[]]>; // kind -> [query tokens, key tokens], token level
    segments: Record<string, [number[], number[]]>; // kind -> [query segments, key segments], token level
    can_words: boolean;
    long?: boolean; // shown in windows only (more than 512 tokens, or a lazy result)
    n_kv_heads?: number; // GQA: key/value heads (0 or = heads: none shared)
  };
  // labels: word-level labels, when the first view is word level (else they come by "labels" request)
  _payload: { key: string; heads: LinePayload; labels?: LevelLabels } | Record<string, never>;
  _error: string;
}

/** Labels of every kind at one level (token or word): what a "labels" request answers. */
export interface LevelLabels {
  tokens: Record<string, [string[], string[]]>;
  segments: Record<string, [number[], number[]]>;
}

/** The labels of one kind: the tokens and sentence segments of the query (left) and key (right) columns. */
export interface Columns {
  tokens: [string[], string[]];
  segments: [number[], number[]];
}

export const FILTERS: Array<[string, string]> = [
  ["all", "All"],
  ["AA", "A → A"],
  ["AB", "A → B"],
  ["BA", "B → A"],
  ["BB", "B → B"],
];

/** Does the sentence filter keep a line from a query in segment qs to a key in segment ks? */
export function keeps(filter: string, qs: number, ks: number): boolean {
  if (filter === "all" || filter.length !== 2) return true;
  return qs === (filter[0] === "A" ? 0 : 1) && ks === (filter[1] === "A" ? 0 : 1);
}

/** Which tokens a windowed payload's rows and columns are (attnwidgets/viewdata/lines.py: window_payload). */
export interface WindowInfo {
  q: [number, number]; // query positions start..stop-1 (the rows)
  k: [number, number]; // key positions start..stop-1 (the first columns)
  far: number[]; // then these key positions outside the window (the strongest from the window's queries)
  n: [number, number]; // queries, keys in the whole input
}

/** The window `[start, stop]` moved by its width (step 1: next, -1: previous), kept inside 0..n. */
export function stepWindow(window: number[], n: number, step: number): [number, number] {
  const [s, e] = window;
  const size = Math.max(1, e - s);
  const start = Math.max(0, Math.min(n - size, s + step * size));
  return [start, start + size];
}

/** The labels of a window: its query tokens, its key tokens, then the far keys (`#position token`). */
export function windowColumns(all: Columns, w: WindowInfo): Columns {
  const [qt, kt] = all.tokens;
  const [qs, ks] = all.segments;
  return {
    tokens: [
      qt.slice(w.q[0], w.q[1]),
      [...kt.slice(w.k[0], w.k[1]), ...w.far.map((p) => `#${p} ${kt[p] ?? ""}`)],
    ],
    segments: [qs.slice(w.q[0], w.q[1]), [...ks.slice(w.k[0], w.k[1]), ...w.far.map((p) => ks[p] ?? 0)]],
  };
}

/** Many tokens and nothing in focus: raise the drawing threshold so the picture stays readable and fast. */
export function lineThreshold(n: number, minWeight: number, focused: boolean): number {
  return !focused && n > 128 ? Math.max(minWeight, 0.1) : minWeight;
}

/** Heads after an arrow key: the next (step 1) or previous (-1) head shown alone, wrapping around. */
export function stepHead(heads: number[], nHeads: number, step: number): number[] {
  if (nHeads <= 0) return heads;
  if (heads.length !== 1) return [step > 0 ? 0 : nHeads - 1];
  return [(((heads[0] + step) % nHeads) + nHeads) % nHeads];
}

const STEPS = 16; // opacity steps per head: lines are batched into one path per step

function render({ model, el }: RenderProps<HeadViewTraits>): () => void {
  const shell = widgetShell(model, el, "aw-head-view", HEAD_VIEW_CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const requester = new Requester(model);
  const swatches = h("div", { className: "aw-bar", "data-testid": "head-swatches" });
  const { scroll, canvas } = scrolledCanvas("lines-canvas");
  scroll.style.maxHeight = "640px";
  const hint = h("div", {
    className: "aw-muted aw-hint",
    text:
      "hover a token · click left tokens to select (shift: a span, ctrl/cmd: add or remove) · click a swatch to toggle a head, double-click to " +
      "isolate · keys: ↑ ↓ layer, ← → one head at a time",
  });
  root.append(title, bar, swatches, errorBox, scroll, hint);
  hint.title = hint.textContent ?? ""; // fitted, the hint is one line: the whole of it on hover
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  // labels travel with the layer they name, so word-level lines are never drawn between token labels.
  let data: { key: string; rows: LineRows; labels: Columns; win: WindowInfo | null } | null = null;
  let hover: { side: "q" | "k"; i: number } | null = null;
  let anchor: number | null = null; // where a shift-click's span starts (shared/span.ts nextSpan)
  let geo = { top: 8, rowH: 16, xl: 100, xr: 360, width: 460, height: 100 };

  const meta = () => model.get("_meta");
  const kind = () => model.get("kind");
  /** Is the current window drawn as a window (a long input, or narrower than the input)? Words never are. */
  const windowed = (): boolean => {
    if (model.get("words")) return false;
    const w = model.get("window") ?? [];
    const nq = meta().tokens[kind()]?.[0].length ?? 0;
    return w.length === 2 && (Boolean(meta().long) || w[0] !== 0 || w[1] !== nq);
  };
  // The same key as HeadView._view_key in Python, so the first payload is recognised.
  const viewKey = () => {
    const base = `${kind()}/${model.get("layer")}/${model.get("words") ? "w" : "t"}`;
    const w = model.get("window");
    return windowed() ? `${base}/${w[0]}-${w[1]}` : base;
  };
  const save = (changes: Partial<HeadViewTraits>) => saveTraits(model, changes);
  const columnsOf = (all: LevelLabels | null, k: string): Columns => ({
    tokens: all?.tokens[k] ?? [[], []],
    segments: all?.segments[k] ?? [[], []],
  });
  /** What the columns show: the labels of the layer on screen (token level before the first one arrives). */
  const shown = (): Columns =>
    data?.labels ?? columnsOf(model.get("words") || windowed() ? null : meta(), kind());
  // Word-level labels of every kind: from _payload or a "labels" request (a saved page answers it offline).
  let wordLabels: LevelLabels | null = null;
  async function labelsFor(k: string, words: boolean): Promise<Columns> {
    if (words && !wordLabels) {
      const reply = await requester.get("labels/w", { what: "labels", words: true });
      wordLabels = reply.content as unknown as LevelLabels;
    }
    return columnsOf(words ? wordLabels : meta(), k);
  }

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const m = meta();
    const [nLayers] = m.shapes[kind()] ?? [0, 0];
    if (m.kinds.length > 1) {
      const kindSel = select(
        m.kinds.map((k) => [k, k]),
        kind(),
        "attention kind",
      );
      kindSel.dataset.testid = "kind-select";
      controls.push(listen(kindSel, "change", () => save({ kind: kindSel.value })));
      bar.append(h("label", {}, "attention", kindSel));
    }
    const layerSel = select(
      Array.from({ length: nLayers }, (_, i): [string, string] => [String(i), String(i)]),
      String(model.get("layer")),
      "layer",
    );
    layerSel.dataset.testid = "layer-select";
    controls.push(listen(layerSel, "change", () => save({ layer: Number(layerSel.value) })));
    bar.append(h("label", {}, "layer", layerSel));
    const [qs, ks] = m.segments[kind()] ?? [[], []];
    if (qs.includes(1) || ks.includes(1)) {
      const f = select(FILTERS, model.get("sentence_filter"), "sentence filter");
      f.dataset.testid = "filter-select";
      controls.push(listen(f, "change", () => save({ sentence_filter: f.value })));
      bar.append(h("label", {}, "sentences", f));
    }
    if (windowed()) {
      const [nq] = m.tokens[kind()]?.[0] ? [m.tokens[kind()][0].length] : [0];
      const w = model.get("window");
      const prev = h("button", {
        type: "button",
        "data-testid": "window-prev",
        title: "previous window (Page Up)",
        text: "◀",
        disabled: w[0] <= 0,
      });
      const next = h("button", {
        type: "button",
        "data-testid": "window-next",
        title: "next window (Page Down)",
        text: "▶",
        disabled: w[1] >= nq,
      });
      const label = h("span", {
        "data-testid": "window-label",
        text: `tokens ${w[0]}–${w[1] - 1} of ${nq}`,
      });
      controls.push(
        listen(prev, "click", () => save({ window: stepWindow(model.get("window"), nq, -1) })),
        listen(next, "click", () => save({ window: stepWindow(model.get("window"), nq, 1) })),
      );
      bar.append(h("span", { className: "aw-window-nav" }, prev, label, next));
    }
    if (m.can_words) {
      const box = h("input", { type: "checkbox", "aria-label": "word level", "data-testid": "words-toggle" });
      box.checked = model.get("words");
      controls.push(listen(box, "change", () => save({ words: box.checked })));
      bar.append(h("label", {}, box, "words"));
    }
    bar.append(shell.exportControls(controls));
  }

  // Swatches are built when the number of heads changes and restyled in place when the shown heads change, so both
  // clicks of a double-click land on the same button.
  const swatchListeners = controlGroup(cleanups);
  let swatchButtons: HTMLButtonElement[] = [];
  function buildSwatches(): void {
    const [, nHeads] = meta().shapes[kind()] ?? [0, 0];
    // Cross-attention reads the encoder's keys: no grouping there.
    const groups = kind() === "cross" ? null : kvGroups(nHeads, meta().n_kv_heads ?? 0);
    const shape = `${nHeads}/${groups?.length ?? 0}`;
    if (swatches.dataset.shape !== shape) {
      swatches.dataset.shape = shape;
      resetControls(swatchListeners);
      swatches.replaceChildren(h("span", { className: "aw-muted", text: "heads" }));
      swatchButtons = [];
      const boxes = (groups ?? [Array.from({ length: nHeads }, (_, i) => i)]).map((heads, g) => {
        if (!groups) return swatches;
        const box = h(
          "span",
          {
            className: "aw-kv-group",
            "data-testid": "kv-group",
            "data-kv": g,
            title: `KV head ${g}: query heads ${heads[0]}–${heads[heads.length - 1]} share its keys and values`,
          },
          h("span", { className: "aw-kv-caption", text: `KV head ${g}` }),
        );
        swatches.append(box);
        return box;
      });
      const size = groups ? groups[0].length : nHeads;
      for (let i = 0; i < nHeads; i++) {
        const kv = groups ? ` · KV head ${Math.floor(i / size)}` : "";
        const s = h("button", {
          type: "button",
          "data-testid": "head-swatch",
          "data-head": i,
          title: `head ${i}${kv}: click to toggle, double-click to show it alone`,
          text: String(i),
        });
        swatchListeners.push(
          listen(s, "click", () => {
            const cur = new Set(model.get("heads"));
            if (cur.has(i)) cur.delete(i);
            else cur.add(i);
            save({ heads: [...cur].sort((a, b) => a - b) });
          }),
          listen(s, "dblclick", () => {
            const cur = model.get("heads");
            const alone = cur.length === 1 && cur[0] === i;
            save({ heads: alone ? Array.from({ length: nHeads }, (_, j) => j) : [i] });
          }),
        );
        boxes[groups ? Math.floor(i / size) : 0].append(s);
        swatchButtons.push(s);
      }
    }
    const on = new Set(model.get("heads"));
    swatchButtons.forEach((s, i) => {
      const [r, g, b] = hexToRgb(categorical(i));
      const ink = 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#000" : "#fff"; // readable on yellow and on black
      s.setAttribute("aria-pressed", on.has(i) ? "true" : "false");
      s.style.cssText = `background:${categorical(i)};color:${ink};border:2px solid ${on.has(i) ? "#0000" : "#999"};
        opacity:${on.has(i) ? 1 : 0.25};min-width:2.2em;border-radius:4px;cursor:pointer`;
    });
  }

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const {
      tokens: [queries, keys],
      segments: [qseg, kseg],
    } = shown();
    const nq = queries.length;
    const nk = keys.length;
    const win = data?.win ?? null;
    const q0 = win ? win.q[0] : 0;
    const nWin = win ? win.k[1] - win.k[0] : nk; // key columns before the far keys
    const gap = win?.far.length ? 1 : 0; // an empty row between the window's keys and the far ones
    const n = Math.max(nq, nk + gap, 1);
    const probe = textMeasurer();
    const wl = labelRoom(probe, queries, t, 180);
    const wr = labelRoom(probe, keys, t, 180);
    const room = fit.room(scroll); // fitted: every row on screen (smaller rows, labels follow), no scrolling
    let rowH = Math.max(4, Math.min(t.font + 6, Math.floor(30000 / 2 / n)));
    if (room) rowH = Math.max(3, Math.min(rowH, Math.floor((room.height - 16) / n)));
    scroll.style.maxHeight = room ? "" : "640px";
    // A window labels each token with its position too (muted, outside the token column); a sentence pair marks
    // its segments there instead: "A" / "B" and a bar along each segment's rows, on both columns.
    const pair = !win && (qseg.includes(1) || kseg.includes(1));
    const posW = win
      ? Math.ceil(String(win.n[0]).length * t.font * 0.62) + 8
      : pair
        ? Math.ceil(t.font * 0.9) + 12
        : 0;
    // Fitted: the gap between the columns gives way so the canvas is no wider than the box.
    const natural = t.name === "lecture" ? 320 : 240;
    const gapW = room ? Math.max(120, Math.min(natural, room.width - (2 * posW + wl + wr + 12))) : natural;
    geo = {
      top: 8,
      rowH,
      xl: posW + wl + 4,
      xr: posW + wl + 4 + gapW,
      width: posW + wl + gapW + wr + posW + 12,
      height: 16 + n * rowH,
    };
    const ctx = prepareCanvas(canvas, geo.width, geo.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, geo.width, geo.height);
    const filter = model.get("sentence_filter");
    const selected = model.get("selected");
    const selRows = selected.map((p) => p - q0).filter((i) => i >= 0 && i < nq);
    const sel = new Set(selRows);
    const yOf = (i: number) => geo.top + (i + 0.5) * rowH;
    const yK = (j: number) => yOf(j < nWin ? j : j + gap);
    const qIn = (i: number) => keeps(filter, qseg[i] ?? 0, filter === "all" ? 0 : filter[1] === "A" ? 0 : 1);
    const kIn = (j: number) => keeps(filter, filter === "all" ? 0 : filter[0] === "A" ? 0 : 1, kseg[j] ?? 0);

    // Lines, batched per (head, opacity step).
    let drawn = 0;
    const counts = [0, 0, 0, 0]; // by (query segment, key segment): AA, AB, BA, BB
    if (data) {
      const { heads: H, nq: dq } = data.rows;
      const focused = hover !== null || selRows.length > 0;
      const thr = lineThreshold(n, model.get("min_weight"), focused);
      let qList: number[] = Array.from({ length: dq }, (_, i) => i);
      if (hover?.side === "q") qList = [hover.i];
      else if (selRows.length) qList = selRows.filter((i) => i < dq);
      const kOnly = hover?.side === "k" ? hover.i : -1;
      const x1 = geo.xl + 6;
      const x2 = geo.xr - 6;
      ctx.lineWidth = rowH >= 10 ? 2 : 1;
      const shown = model.get("heads");
      for (const hd of shown) {
        if (hd >= H) continue;
        const paths: Path2D[] = Array.from({ length: STEPS }, () => new Path2D());
        const used = new Uint8Array(STEPS);
        forEachLine(data.rows, hd, qList, kOnly, thr, (q, k, w) => {
          const qs = qseg[q] ?? 0;
          const ks = kseg[k] ?? 0;
          counts[qs * 2 + ks]++;
          if (!keeps(filter, qs, ks)) return;
          const step = Math.min(STEPS - 1, Math.floor(Math.min(1, w) * STEPS));
          paths[step].moveTo(x1, yOf(q));
          paths[step].lineTo(x2, yK(k));
          used[step] = 1;
          drawn++;
        });
        // One head alone: its colour darkened to 4.5 : 1 on the background (a pale yellow or sky-blue head
        // drawn at opacity = weight vanished on a projector); several keep their hues apart.
        ctx.strokeStyle = shown.length === 1 ? readableOn(categorical(hd), t.bg) : categorical(hd);
        for (let s = 0; s < STEPS; s++) {
          if (!used[s]) continue;
          ctx.globalAlpha = Math.max(0.06, (s + 1) / STEPS);
          ctx.stroke(paths[s]);
        }
      }
      ctx.globalAlpha = 1;
    }

    // Tokens: text drawn as pixels (never markup); greyed when outside the filter, marked when hovered or selected.
    ctx.font = `${Math.min(t.font, rowH - 2)}px ${t.fontFamily}`;
    ctx.textBaseline = "middle";
    const mark = (x: number, y: number, w: number, colour: string) => {
      ctx.fillStyle = colour;
      ctx.fillRect(x, y - rowH / 2 + 1, w, rowH - 2);
    };
    if (rowH >= 7) {
      for (let i = 0; i < nq; i++) {
        const hot = (hover?.side === "q" && hover.i === i) || sel.has(i);
        if (hot) mark(2, yOf(i), geo.xl - 2, sel.has(i) ? "rgba(209,36,47,0.16)" : "rgba(0,0,0,0.08)");
        ctx.textAlign = "right";
        ctx.fillStyle = hot ? t.accent : qIn(i) ? t.fg : "#b8bec6";
        ctx.fillText(fitToken(ctx, queries[i] ?? "", geo.xl - posW - 4, 20), geo.xl, yOf(i));
        if (posW && win) {
          ctx.textAlign = "left";
          ctx.fillStyle = t.muted;
          ctx.fillText(String(q0 + i), 2, yOf(i));
        }
      }
      for (let j = 0; j < nk; j++) {
        const hot = hover?.side === "k" && hover.i === j;
        if (hot) mark(geo.xr - 2, yK(j), wr, "rgba(0,0,0,0.08)");
        ctx.textAlign = "left";
        ctx.fillStyle = hot ? t.accent : j >= nWin ? t.muted : kIn(j) ? t.fg : "#b8bec6";
        ctx.fillText(fitToken(ctx, keys[j] ?? "", wr, 24), geo.xr, yK(j));
        if (posW && win && j < nWin) {
          ctx.fillStyle = t.muted;
          ctx.fillText(String(win.k[0] + j), geo.xr + wr + 8, yK(j));
        }
      }
      if (gap) {
        ctx.fillStyle = t.muted;
        ctx.textAlign = "left";
        ctx.fillText("far keys:", geo.xr, yOf(nWin));
      }
      if (pair) {
        const marks = (seg: number[], x: number, y: (i: number) => number) => {
          for (let i = 0; i < seg.length; i++) {
            if (i > 0 && seg[i] === seg[i - 1]) continue;
            let end = i;
            while (end + 1 < seg.length && seg[end + 1] === seg[i]) end++;
            ctx.fillStyle = t.muted;
            ctx.fillRect(x + posW - 8, y(i) - rowH / 2 + 2, 3, y(end) - y(i) + rowH - 4);
            ctx.fillStyle = t.fg;
            ctx.textAlign = "left";
            ctx.fillText(seg[i] ? "B" : "A", x, y(i));
          }
        };
        marks(qseg.slice(0, nq), 2, yOf);
        marks(kseg.slice(0, nk), geo.xr + wr + 4, yK);
      }
    }
    const all = counts[0] + counts[1] + counts[2] + counts[3];
    Object.assign(canvas.dataset, {
      view: data?.key ?? "",
      floor: String(data?.rows.floor ?? ""),
      lines: String(drawn),
      linesAll: String(all),
      linesAa: String(counts[0]),
      linesAb: String(counts[1]),
      linesBa: String(counts[2]),
      linesBb: String(counts[3]),
      filter,
      window: win ? `${win.q[0]}-${win.q[1]}` : "",
      keyWindow: win ? `${win.k[0]}-${win.k[1]}` : "",
      far: win ? win.far.join(",") : "",
      hover: hover ? `${hover.side}${hover.i}` : "",
      heads: model.get("heads").join(","),
      selected: selected.join(","),
      top: String(geo.top),
      rowH: String(rowH),
      xl: String(geo.xl),
      xr: String(geo.xr),
      nq: String(nq),
      nk: String(nk),
    });
    const which = kind() === "cross" ? "target (left) → source (right)" : `${kind()} attention`;
    const where = win ? ` · tokens ${win.q[0]}–${win.q[1] - 1} of ${win.n[0]}` : "";
    title.textContent = `${userText(meta().title)} · ${which} · layer ${model.get("layer")}${model.get("words") ? " · words" : ""}${where}`;
  }

  /** Scroll the first selected query row into view (a window's selection may be below the fold). */
  function revealSelection(tries = 20): void {
    if (!scroll.isConnected || scroll.clientHeight === 0) {
      // Not laid out yet (the first paint happens before the page shows the widget): try again shortly.
      if (tries > 0) setTimeout(() => revealSelection(tries - 1), 100);
      return;
    }
    const q0 = data?.win ? data.win.q[0] : 0;
    const rows = model
      .get("selected")
      .map((p) => p - q0)
      .filter((i) => i >= 0 && i < (data?.rows.nq ?? 0));
    if (!rows.length) return;
    const y = geo.top + (rows[0] + 0.5) * geo.rowH;
    if (y < scroll.scrollTop + geo.rowH || y > scroll.scrollTop + scroll.clientHeight * 0.6)
      scroll.scrollTop = Math.max(0, y - scroll.clientHeight / 2);
  }

  /** Does a payload with this floor hold every line the page may draw (all weights >= min_weight)? */
  const complete = (floor: number | undefined) => (floor ?? 0) <= model.get("min_weight") + 1e-12;

  async function refresh(): Promise<void> {
    const key = viewKey();
    const k = kind();
    const words = model.get("words");
    const initial = model.get("_payload");
    const first = initial && "key" in initial && initial.key === key ? initial : null;
    if (first?.labels) wordLabels ??= first.labels;
    let payload: LinePayload;
    let labels: Columns;
    let win: WindowInfo | null = null;
    const w = model.get("window");
    try {
      if (first && complete(first.heads.floor)) {
        payload = first.heads;
        win = (first.heads as { window?: WindowInfo }).window ?? null;
        labels = await labelsFor(k, words);
      } else {
        // The cache key carries min_weight: a lower one needs a payload with a lower floor.
        const [cols, reply] = await Promise.all([
          labelsFor(k, words),
          requester.get(`${key}/${model.get("min_weight")}`, {
            what: "layer",
            kind: k,
            layer: model.get("layer"),
            words,
            ...(windowed() ? { window: [w[0], w[1]] } : {}),
          }),
        ]);
        labels = cols;
        payload = payloadFromReply(reply.content, reply.buffers);
        win = (reply.content.window as WindowInfo | undefined) ?? null;
        showError(model.get("_error"));
      }
      if (key !== viewKey()) return; // moved on meanwhile
      if (win) labels = windowColumns(labels, win);
      const rows = toRows(payload);
      if (rows.nq !== labels.tokens[0].length)
        throw new Error(`${rows.nq} query rows do not fit ${labels.tokens[0].length} labels`);
      data = { key, rows, labels, win };
    } catch (e) {
      showError(String((e as Error).message ?? e));
      return;
    }
    paint();
    revealSelection();
  }

  function tokenAt(e: MouseEvent): { side: "q" | "k"; i: number } | null {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    const i = Math.floor((y - geo.top) / geo.rowH);
    const [queries, keys] = shown().tokens;
    if (x <= geo.xl + 4 && i >= 0 && i < queries.length) return { side: "q", i };
    const win = data?.win;
    const nWin = win ? win.k[1] - win.k[0] : keys.length;
    const j = win?.far.length && i >= nWin ? i - 1 : i; // the gap row before the far keys
    if (x >= geo.xr - 4 && i >= 0 && j < keys.length && !(win?.far.length && i === nWin))
      return { side: "k", i: j };
    return null;
  }

  cleanups.push(
    listen(canvas, "mousemove", (e: MouseEvent) => {
      const at = tokenAt(e);
      if (at?.side === hover?.side && at?.i === hover?.i) return;
      hover = at;
      canvas.style.cursor = at?.side === "q" ? "pointer" : "default";
      paint();
    }),
    listen(canvas, "mouseleave", () => {
      hover = null;
      paint();
    }),
    listen(canvas, "click", (e: MouseEvent) => {
      const at = tokenAt(e);
      if (at?.side !== "q") return;
      const q0 = data?.win ? data.win.q[0] : 0; // a row of a window is token q0 + row
      const pick = nextSpan(model.get("selected"), q0 + at.i, e, anchor);
      anchor = pick.anchor;
      save({ selected: pick.selection });
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return;
      const [nLayers, nHeads] = meta().shapes[kind()] ?? [0, 0];
      const layer = model.get("layer");
      if (e.key === "ArrowDown") save({ layer: Math.min(nLayers - 1, layer + 1) });
      else if (e.key === "ArrowUp") save({ layer: Math.max(0, layer - 1) });
      else if (e.key === "ArrowRight") save({ heads: stepHead(model.get("heads"), nHeads, 1) });
      else if (e.key === "ArrowLeft") save({ heads: stepHead(model.get("heads"), nHeads, -1) });
      else if (e.key === "Escape") save({ selected: [] });
      else if ((e.key === "PageDown" || e.key === "PageUp") && windowed()) {
        const nq = meta().tokens[kind()]?.[0].length ?? 0;
        save({ window: stepWindow(model.get("window"), nq, e.key === "PageDown" ? 1 : -1) });
      } else return;
      e.preventDefault();
    }),
  );

  const rebuild = () => {
    buildControls();
    buildSwatches();
    refresh();
  };
  cleanups.push(
    onModel(model, "change:layer", rebuild),
    onModel(model, "change:window", rebuild),
    onModel(model, "change:kind", rebuild),
    onModel(model, "change:words", rebuild),
    onModel(model, "change:_meta", () => {
      requester.clear();
      wordLabels = null;
      rebuild();
    }),
    onModel(model, "change:heads", () => {
      buildSwatches();
      paint();
    }),
    onModel(model, "change:sentence_filter", () => {
      buildControls();
      paint();
    }),
    onModel(model, "change:selected", () => {
      paint();
      revealSelection();
    }),
    onModel(model, "change:min_weight", () => {
      if (data && complete(data.rows.floor)) paint();
      else refresh(); // the payload lacks the weights between the new min_weight and its floor
    }),
    onModel(model, "change:_payload", () => {
      if (data?.key !== viewKey() || !complete(data.rows.floor)) refresh();
    }),
    onModel(model, "change:theme", paint),
  );
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
}

/** The head view's own styles: GQA groups of swatches, the window navigation. */
const HEAD_VIEW_CSS = `
.aw-kv-group { display: inline-flex; gap: 3px; align-items: center; padding: 2px 4px; border: 2px solid var(--aw-muted);
  border-radius: 6px; }
.aw-kv-caption { color: var(--aw-muted); font-size: .8em; white-space: nowrap; }
.aw-window-nav { display: inline-flex; gap: 6px; align-items: center; font-variant-numeric: tabular-nums; }
`;

export default { render };
