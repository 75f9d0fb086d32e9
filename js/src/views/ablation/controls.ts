// AblationWidget's controls: the layers x heads grid of toggles (GQA groups captioned), the stack and text menus,
// the mode menu, reset and the scale slider.

import { kvGroups } from "../../draw/heads";
import { type SpanModel, SpanSelector } from "../../draw/span";
import { h, listen, resetControls, select } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import { userText } from "../../shared/text";
import {
  type AblationDict,
  type AblationTraits,
  DEBOUNCE_MS,
  canonical,
  sameAblation,
  seqAfter,
  setScale,
  withMode,
} from "./state";

export type Pick1 = (changes: Partial<Pick<AblationTraits, "layer" | "head" | "item" | "kind">>) => void;

/** The grid's buttons: one per layer, one per (layer, head). */
export interface GridButtons {
  layers: HTMLButtonElement[];
  cells: HTMLButtonElement[][];
}

/** The "KV head g" captions over each group of heads that read one key/value head. */
function kvCaptions(grid: HTMLElement, groups: number[][]): void {
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

/**
 * Build the grid for `nLayers` x `nHeads` (GQA: heads that read one key/value head grouped under a "KV head g"
 * caption, with a gap between groups). A layer button calls `onLayer`, a cell `onHead`; listeners go to `listeners`.
 */
export function buildGrid(
  grid: HTMLElement,
  shape: { nLayers: number; nHeads: number; kvHeads: number },
  listeners: Array<() => void>,
  onLayer: (layer: number) => void,
  onHead: (layer: number, head: number) => void,
): GridButtons {
  const { nLayers, nHeads } = shape;
  resetControls(listeners, grid);
  grid.style.gridTemplateColumns = `max-content repeat(${nHeads}, max-content)`;
  const groups = kvGroups(nHeads, shape.kvHeads);
  const size = groups ? groups[0].length : nHeads;
  const groupStart = (hd: number) => groups !== null && hd > 0 && hd % size === 0;
  if (groups) kvCaptions(grid, groups);
  grid.append(h("span", { className: "aw-abl-colhead", text: "head" }));
  for (let hd = 0; hd < nHeads; hd++) {
    const col = h("span", { className: "aw-abl-colhead", text: String(hd) });
    if (groupStart(hd)) col.style.marginLeft = "8px";
    grid.append(col);
  }
  const out: GridButtons = { layers: [], cells: [] };
  for (let l = 0; l < nLayers; l++) {
    const lb = h("button", { type: "button", className: "aw-abl-layer", "data-testid": `layer-${l}` });
    listeners.push(listen(lb, "click", () => onLayer(l)));
    out.layers.push(lb);
    grid.append(lb);
    const row: HTMLButtonElement[] = [];
    for (let hd = 0; hd < nHeads; hd++) {
      const c = h("button", { type: "button", className: "aw-abl-cell", "data-testid": `cell-${l}-${hd}` });
      if (groups) c.dataset.kv = String(Math.floor(hd / size));
      if (groupStart(hd)) c.style.marginLeft = "8px";
      listeners.push(listen(c, "click", () => onHead(l, hd)));
      row.push(c);
      grid.append(c);
    }
    out.cells.push(row);
  }
  return out;
}

/** The stack menu (several stacks) into `stackBox` and the text menu (several texts) into `itemBox`. */
export function buildMenus(
  model: WidgetModel<AblationTraits>,
  stackBox: HTMLElement,
  itemBox: HTMLElement,
  listeners: Array<() => void>,
  pick: Pick1,
): void {
  const payload = model.get("_payload");
  const stacks = Object.keys(payload.stacks ?? {});
  resetControls(listeners, stackBox);
  if (stacks.length > 1) {
    const s = select(
      stacks.map((k) => [k, k]),
      model.get("kind"),
      "attention stack",
    );
    listeners.push(listen(s, "change", () => pick({ kind: s.value })));
    stackBox.append(h("label", {}, "attention", s));
  }
  const items = payload.items ?? [];
  itemBox.replaceChildren();
  if (items.length > 1) {
    const s = select(
      items.map((t, i) => [String(i), `${i}: ${userText(t)}`]),
      String(model.get("item")),
      "text shown",
    );
    s.dataset.testid = "item-select";
    listeners.push(listen(s, "change", () => pick({ item: Number(s.value) })));
    itemBox.append(h("label", {}, "text", s));
  }
}

/** The toolbar's own parts: how a disabled head is replaced, and reset. */
export function toolbarParts(mode: string): { modeSel: HTMLSelectElement; reset: HTMLButtonElement } {
  const modeSel = select(
    [
      ["zero", "zero (output removed)"],
      ["uniform", "uniform attention"],
      ["mean", "mean pattern"],
    ],
    mode,
    "how a disabled head is replaced",
  );
  modeSel.dataset.testid = "mode-select";
  const reset = h("button", { type: "button", text: "reset", "data-testid": "reset" });
  return { modeSel, reset };
}

/** The scale slider of the selected head, with its value. */
export function scaleSlider(): { slider: HTMLInputElement; text: HTMLSpanElement } {
  const slider = h("input", {
    type: "range",
    min: 0,
    max: 1,
    step: 0.05,
    "aria-label": "scale of the selected head",
    "data-testid": "scale-slider",
  });
  return { slider, text: h("span", { className: "aw-abl-nums", "data-testid": "scale-value" }) };
}

let seqCounter = 0;
/** Increasing across every view in the page, and above any seq already answered (state.ts seqAfter). */
function nextSeq(answered: number): number {
  seqCounter = (seqCounter + 1) % 1000;
  return seqAfter(answered, Date.now(), seqCounter);
}

/**
 * What the page shows (`want`, `mode`) and the one change the kernel may owe an answer to: `sent` is the
 * `_page_seq` of the unanswered change of the `ablation` / `mode` traits (0: none); the state update whose
 * _payload.seq reaches it answers it, with the state Python kept. Changes made meanwhile only update `want`, saved
 * when the answer arrives, so the kernel never gets a backlog.
 */
export class ApplyQueue {
  want: AblationDict;
  mode: string;
  roundtrip = Number.NaN;
  private sent = 0;
  private sentAt = 0;
  private dirty = false;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly model: WidgetModel<AblationTraits>,
    private readonly redraw: () => void, // the grid, after `want` changed
    private readonly status: () => void, // the status line
  ) {
    this.want = canonical(model.get("ablation"));
    this.mode = model.get("mode");
  }

  idle(): boolean {
    return this.sent === 0 && !this.dirty && this.timer === undefined;
  }

  /** Show `next` now; send it after `delay` ms (or when the message in flight is answered). */
  change(next: AblationDict, delay: number): void {
    this.want = canonical(next);
    this.redraw();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.sent) this.dirty = true;
      else this.send();
    }, delay);
    this.status();
  }

  private send(): void {
    this.dirty = false;
    this.sent = nextSeq(this.model.get("_payload")?.seq ?? 0);
    this.sentAt = performance.now();
    // The edit is the widget's own state, set here: every host hands it to Python as a trait change (marimo's
    // mo.ui.anywidget knows a widget's value only from such changes), Python re-runs on it and answers through
    // _payload.seq. Python never sets these back for the page to save again: the page saves on a user's action only.
    this.model.set("ablation", this.want);
    this.model.set("mode", this.mode);
    this.model.set("_page_seq", this.sent);
    this.model.save_changes();
    this.status();
  }

  /** A state update arrived: if it answers the message in flight, send the latest change or take Python's state. */
  answered(): void {
    if (!this.sent || (this.model.get("_payload")?.seq ?? 0) < this.sent) return;
    this.roundtrip = performance.now() - this.sentAt;
    this.sent = 0;
    if (this.dirty) this.send();
    else if (this.timer === undefined) {
      this.want = canonical(this.model.get("ablation"));
      this.mode = this.model.get("mode");
    }
    this.redraw();
  }

  /** Python changed the ablation (not in answer to this page): take it when nothing is pending. */
  takeAblation(): void {
    if (this.idle() && !sameAblation(this.want, this.model.get("ablation"))) {
      this.want = canonical(this.model.get("ablation"));
      this.redraw();
    }
  }

  /** Python changed the mode: take it when nothing is pending. */
  takeMode(): void {
    if (this.idle()) {
      this.mode = this.model.get("mode");
      this.redraw();
    }
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
  }
}

/** The toolbar's and slider's listeners: a mode for every disabled head, reset, the selected head's scale. */
export function editListeners(
  model: WidgetModel<AblationTraits>,
  parts: {
    modeSel: HTMLSelectElement;
    reset: HTMLButtonElement;
    slider: HTMLInputElement;
    text: HTMLElement;
  },
  queue: ApplyQueue,
): Array<() => void> {
  const { modeSel, reset, slider, text } = parts;
  return [
    listen(modeSel, "change", () => {
      queue.mode = modeSel.value;
      queue.change(withMode(queue.want, queue.mode), 0);
    }),
    listen(reset, "click", () => queue.change({ edits: [] }, 0)),
    listen(slider, "input", () => {
      text.textContent = `×${Number(slider.value).toFixed(2)}`;
      const at = [model.get("kind"), model.get("layer"), model.get("head")] as const;
      queue.change(setScale(queue.want, ...at, Number(slider.value)), DEBOUNCE_MS);
    }),
  ];
}

/** A click on a row of either map selects that query token (the selection's click rules: shift extends, ctrl/cmd
 * adds or removes); Escape clears. The maps publish their layout (x0, y0, cell) in their data attributes. */
export function mapClicks(
  model: WidgetModel<AblationTraits>,
  maps: HTMLCanvasElement[],
  root: HTMLElement,
): Array<() => void> {
  const picker = new SpanSelector(model as unknown as SpanModel);
  const rowAt = (c: HTMLCanvasElement, e: MouseEvent): number => {
    const rect = c.getBoundingClientRect();
    const q = Math.floor((e.clientY - rect.top - Number(c.dataset.y0)) / Number(c.dataset.cell || 1));
    const n = model.get("_payload").map?.queries.length ?? 0;
    return q >= 0 && q < n ? q : -1;
  };
  return [
    ...maps.map((c) =>
      listen(c, "click", (e: MouseEvent) => {
        const q = rowAt(c, e);
        if (q >= 0) picker.click(q, e);
      }),
    ),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Escape" && (model.get("selection") ?? []).length) picker.clear();
    }),
  ];
}
