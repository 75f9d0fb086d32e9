import { describe, expect, it } from "vitest";
import {
  SpanSelector,
  nextSpan,
  oneQuery,
  selectQuery,
  selectionKey,
  spanBand,
  spanCaption,
  spanRoom,
  spanRuns,
  spanTop,
  stepSpan,
} from "../src/draw/span";
import { theme } from "../src/shared/theme";

const plain = { shiftKey: false, ctrlKey: false, metaKey: false };
const shift = { ...plain, shiftKey: true };
const ctrl = { ...plain, ctrlKey: true };
const cmd = { ...plain, metaKey: true };

describe("nextSpan", () => {
  it("a click selects one token; clicking the only selected token clears", () => {
    expect(nextSpan([], 3, plain, null)).toEqual({ selection: [3], anchor: 3 });
    expect(nextSpan([3], 3, plain, 3)).toEqual({ selection: [], anchor: null });
    expect(nextSpan([1, 2], 2, plain, 1)).toEqual({ selection: [2], anchor: 2 });
  });
  it("shift-click selects the contiguous span from the anchor, either direction", () => {
    expect(nextSpan([4], 7, shift, 4).selection).toEqual([4, 5, 6, 7]);
    expect(nextSpan([4], 2, shift, 4).selection).toEqual([2, 3, 4]);
    // a second shift-click moves the far end, keeping the anchor
    expect(nextSpan([4, 5, 6, 7], 5, shift, 4)).toEqual({ selection: [4, 5], anchor: 4 });
    // no anchor: from the first selected token, or the token itself
    expect(nextSpan([6], 8, shift, null).selection).toEqual([6, 7, 8]);
    expect(nextSpan([], 8, shift, null).selection).toEqual([8]);
  });
  it("ctrl- or cmd-click adds or removes one token, keeping the list sorted", () => {
    expect(nextSpan([5], 2, ctrl, 5)).toEqual({ selection: [2, 5], anchor: 2 });
    expect(nextSpan([2, 5], 5, cmd, 2)).toEqual({ selection: [2], anchor: 2 });
    expect(nextSpan([2, 5, 9], 7, ctrl, 2).selection).toEqual([2, 5, 7, 9]);
  });
});

describe("stepSpan (Shift+ArrowDown / Shift+ArrowUp)", () => {
  it("starts at the first or last row, then grows and shrinks the span at its far end", () => {
    expect(stepSpan([], null, 1, 5)).toEqual({ selection: [0], anchor: 0 });
    expect(stepSpan([], null, -1, 5)).toEqual({ selection: [4], anchor: 4 });
    expect(stepSpan([2], 2, 1, 5)).toEqual({ selection: [2, 3], anchor: 2 });
    expect(stepSpan([2, 3], 2, -1, 5)).toEqual({ selection: [2], anchor: 2 });
    expect(stepSpan([2], 2, -1, 5)).toEqual({ selection: [1, 2], anchor: 2 });
    expect(stepSpan([3, 4], 3, 1, 5).selection).toEqual([3, 4]); // stays inside the rows
  });
});

describe("selection keys and captions", () => {
  it("runs and keys name a selection by its contiguous runs", () => {
    expect(spanRuns([1, 2, 3, 7, 9, 10])).toEqual([
      [1, 4],
      [7, 8],
      [9, 11],
    ]);
    expect(selectionKey([1, 2, 3, 7])).toBe("1:4,7:8");
    expect(selectionKey([])).toBe("");
  });
  it("captions read as attnwidgets/viewdata/selection.py span_label", () => {
    expect(spanCaption(["[CLS]", "New", "York", "is", "big"], [1, 2], "mean")).toBe(
      "mean of 2 rows: New York (1–2)",
    );
    expect(spanCaption(["a", "b", "c", "d", "e", "f"], [0, 2, 5], "sum")).toBe("sum of 3 rows: a · c · f");
    expect(spanCaption(["a"], [0], "mean")).toBe("mean of 1 row: a (0)");
    expect(spanCaption(["a"], [], "mean")).toBe("");
  });
  it("a mean is drawn on the map's scale, a sum on its own", () => {
    const row = new Float32Array([0.5, 1.5, 0.2]);
    expect(spanTop(row, "mean", 0.9)).toBe(0.9);
    expect(spanTop(row, "sum", 0.9)).toBe(1.5);
  });
});

describe("SpanSelector", () => {
  it("keeps the anchor between clicks and syncs each click once", () => {
    const state: Record<string, unknown> = { selection: [], combine: "mean" };
    let saves = 0;
    const model = {
      get: (k: string) => state[k],
      set: (k: string, v: unknown) => {
        state[k] = v;
      },
      save_changes: () => {
        saves++;
      },
    } as unknown as ConstructorParameters<typeof SpanSelector>[0];
    const s = new SpanSelector(model);
    s.click(5, plain);
    s.click(6, shift); // "New" then shift "York"
    expect(state.selection).toEqual([5, 6]);
    s.click(3, shift);
    expect(state.selection).toEqual([3, 4, 5]);
    s.click(9, ctrl);
    expect(state.selection).toEqual([3, 4, 5, 9]);
    s.clear();
    expect(state.selection).toEqual([]);
    expect(s.anchor).toBeNull();
    expect(saves).toBe(5);
  });
});

describe("SpanSelector keys and the combined row's room", () => {
  it("Shift+arrows step the span, Escape clears a selection, other keys are left alone", () => {
    const state: Record<string, unknown> = { selection: [], combine: "mean" };
    const model = {
      get: (k: string) => state[k],
      set: (k: string, v: unknown) => {
        state[k] = v;
      },
      save_changes: () => {},
    } as unknown as ConstructorParameters<typeof SpanSelector>[0];
    const s = new SpanSelector(model);
    expect(s.keydown({ key: "Escape", shiftKey: false }, 5)).toBe(false); // nothing selected: not ours
    expect(s.keydown({ key: "ArrowDown", shiftKey: true }, 5)).toBe(true);
    expect(s.keydown({ key: "ArrowDown", shiftKey: true }, 5)).toBe(true);
    expect(state.selection).toEqual([0, 1]);
    expect(s.keydown({ key: "ArrowDown", shiftKey: false }, 5)).toBe(false); // a layer step, not a span step
    expect(s.keydown({ key: "ArrowRight", shiftKey: true }, 5)).toBe(false);
    expect(state.selection).toEqual([0, 1]);
    expect(s.keydown({ key: "Escape", shiftKey: false }, 5)).toBe(true);
    expect(state.selection).toEqual([]);
  });

  it("adds the band's gap, its height and 4 px", () => {
    const t = theme("light");
    const band = spanBand(20, t);
    expect(spanRoom(20, t)).toBe(band.gap + band.height + 4);
    expect(spanRoom(100, t)).toBe(band.gap + 28 + 4); // the band is at most 28 px tall
  });
});

describe("oneQuery and selectQuery (the QK step-through's one query)", () => {
  it("keeps a selected query, else takes the first selected token", () => {
    expect(oneQuery([4, 5], 5)).toBe(5);
    expect(oneQuery([4, 5], 2)).toBe(4);
    expect(oneQuery([], 2)).toBe(2);
  });
  it("selects a query chosen outside the selection alone", () => {
    const sel = [4, 5];
    expect(selectQuery(sel, 5)).toBe(sel);
    expect(selectQuery(sel, 1)).toEqual([1]);
    expect(selectQuery([], 1)).toEqual([]);
  });
  it("agrees with a click: the clicked token alone becomes the query", () => {
    const pick = nextSpan([4, 5], 2, { shiftKey: false, ctrlKey: false, metaKey: false }, 4);
    expect(oneQuery(pick.selection, 5)).toBe(2);
  });
});
