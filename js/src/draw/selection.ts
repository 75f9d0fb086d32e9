// Choosing a head: a click on a canvas picks the (layer, head) under the mouse, and the arrow keys step through the
// grid (← → head, ↑ ↓ layer). Keys typed in a menu or a box stay with it, so a <select> still steps its options.

import { listen, typedInControl } from "../shared/dom";

export interface HeadPick {
  layer: number;
  head: number;
}

/** The part of a widget's model these helpers use: the synced `layer` and `head` traits. */
export interface LayerHeadModel {
  get(key: "layer" | "head"): number;
  set(key: "layer" | "head", value: number): void;
  save_changes(): void;
}

/** The layer and head after an arrow key, kept within an nLayers x nHeads grid; null for any other key. */
export function arrowStep(key: string, at: HeadPick, nLayers: number, nHeads: number): HeadPick | null {
  const { layer, head } = at;
  if (key === "ArrowRight") return { layer, head: Math.min(nHeads - 1, head + 1) };
  if (key === "ArrowLeft") return { layer, head: Math.max(0, head - 1) };
  if (key === "ArrowDown") return { layer: Math.min(nLayers - 1, layer + 1), head };
  if (key === "ArrowUp") return { layer: Math.max(0, layer - 1), head };
  return null;
}

/** Set `layer` and `head` and sync both in one message. */
export function selectHead(model: LayerHeadModel, pick: HeadPick): void {
  model.set("layer", pick.layer);
  model.set("head", pick.head);
  model.save_changes();
}

/** A click on `canvas` selects the head `hitAt` finds there (nothing outside one), then calls `after`. */
export function clickToSelect(
  canvas: HTMLElement,
  model: LayerHeadModel,
  hitAt: (e: MouseEvent) => HeadPick | null,
  after: () => void,
): () => void {
  return listen(canvas, "click", (e: MouseEvent) => {
    const hit = hitAt(e);
    if (!hit) return;
    selectHead(model, hit);
    after();
  });
}

/** Arrow keys on `root` step the selection within `shape()` (layers, heads), set and sync it, then call `after`. */
export function arrowKeysSelect(
  root: HTMLElement,
  model: LayerHeadModel,
  shape: () => readonly [number, number],
  after: () => void = () => {},
): () => void {
  return listen(root, "keydown", (e: KeyboardEvent) => {
    if (typedInControl(e)) return;
    const [nLayers, nHeads] = shape();
    const next = arrowStep(e.key, { layer: model.get("layer"), head: model.get("head") }, nLayers, nHeads);
    if (!next) return;
    e.preventDefault();
    selectHead(model, next);
    after();
  });
}

/** True when two picks name the same head. */
export function sameHead(a: HeadPick, b: HeadPick): boolean {
  return a.layer === b.layer && a.head === b.head;
}
