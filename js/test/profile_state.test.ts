import { describe, expect, it } from "vitest";
import {
  type Doc,
  captionText,
  keyAction,
  pickKey,
  profileKey,
  profileRequest,
  queryRange,
  tipText,
  titleText,
  unitScale,
  unitStarts,
} from "../src/views/profile/state";

// Two sentences in one paragraph, then a second paragraph: "A b. C d.\n\nE f."
const DOC: Doc = {
  pieces: ["A", " b.", " C", " d.", "\n\n", "E", " f."],
  queries: ["A", " b.", " C", " d.", "\n\n", "E", " f."],
  sentence: [0, 2, 5],
  paragraph: [0, 5],
};

describe("profile view state", () => {
  it("names a profile like AttentionProfile._key, the selection as runs", () => {
    expect(profileKey("self", 1, -1, [0, 1, 2, 5], "sum")).toBe("self/1/-1/0:3,5:6/sum");
    const v = { kind: "self", layer: 2, head: 3, selection: [4], combine: "" };
    expect(pickKey(v)).toBe("self/2/3/4:5/mean"); // "" combine is the mean
    expect(profileRequest(v)).toEqual({
      what: "profile",
      kind: "self",
      layer: 2,
      head: 3,
      selection: [4],
      combine: "mean",
    });
  });

  it("starts a unit at every token, sentence or paragraph", () => {
    expect(unitStarts(DOC, "token")).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(unitStarts(DOC, "sentence")).toEqual([0, 2, 5]);
    expect(unitStarts(DOC, "paragraph")).toEqual([0, 5]);
    expect(unitStarts(undefined, "sentence")).toEqual([]);
  });

  it("adds the weights up per unit, with the largest unit the top of the scale", () => {
    const w = new Float32Array([0.1, 0.1, 0.2, 0.2, 0, 0.3, 0.1]);
    const s = unitScale(w, [0, 2, 5], 7);
    expect(Array.from(s.values).map((v) => v.toFixed(2))).toEqual(["0.20", "0.40", "0.40"]);
    expect(Array.from(s.unitOf)).toEqual([0, 0, 1, 1, 1, 2, 2]);
    expect(s.vmax).toBeCloseTo(0.4);
    expect(unitScale(new Float32Array(3), [0], 3).vmax).toBe(1); // all zero: a scale of 1, not 0
  });

  it("clamps the query boxes to at least one token inside the document", () => {
    expect(queryRange(2, 5, 7)).toEqual([2, 5]);
    expect(queryRange(-4, 99, 7)).toEqual([0, 7]);
    expect(queryRange(6, 3, 7)).toEqual([6, 7]); // to before from: one token
    expect(queryRange(1.6, 2.2, 7)).toEqual([2, 3]); // rounded
  });

  it("steps heads and layers with the arrows, grows the query with shift, clears with Escape", () => {
    const at = { layer: 1, head: 0, nLayers: 3, nHeads: 4, selfQueries: true };
    expect(keyAction("ArrowRight", false, at)).toEqual({ head: 1 });
    expect(keyAction("ArrowLeft", false, at)).toEqual({ head: -1 }); // the mean of heads
    expect(keyAction("ArrowLeft", false, { ...at, head: -1 })).toEqual({ head: -1 });
    expect(keyAction("ArrowRight", false, { ...at, head: 3 })).toEqual({ head: 3 });
    expect(keyAction("ArrowDown", false, at)).toEqual({ layer: 2 });
    expect(keyAction("ArrowDown", false, { ...at, layer: 2 })).toEqual({ layer: 2 });
    expect(keyAction("ArrowUp", false, { ...at, layer: 0 })).toEqual({ layer: 0 });
    expect(keyAction("ArrowDown", true, at)).toEqual({ step: 1 });
    expect(keyAction("ArrowUp", true, at)).toEqual({ step: -1 });
    // cross-attention: the queries are not in the text, so shift+down steps the layer
    expect(keyAction("ArrowDown", true, { ...at, selfQueries: false })).toEqual({ layer: 2 });
    expect(keyAction("Escape", false, at)).toEqual({ clear: true });
    expect(keyAction("a", false, at)).toBeNull();
  });

  it("writes the title, the caption and a key's tooltip", () => {
    expect(titleText("doc", "self", 2, -1, 7)).toBe(
      "\u2068doc\u2069 · self attention · layer 2 · mean of heads · 7 tokens",
    );
    expect(titleText("doc", "cross", 0, 3, 7)).toContain("· head 3 ·");
    expect(captionText(DOC, "sentence", [2, 3], "")).toBe(
      "attention per sentence from the \u2068mean of 2 rows: C d. (2–3)\u2069",
    );
    const tip = tipText(DOC, "sentence", 3, 0.2, 1, [2, 5], 0.4, true);
    expect(tip.split("\n")).toEqual([
      "\u2068 d.\u2069 (key 3): 0.2000",
      "sentence 2 (keys 2–4): 0.4000",
      "click: select · shift-click: make it the query",
    ]);
    expect(tipText(DOC, "token", 0, 0.5, 0, [0, 1], 0.5, false).split("\n")).toEqual([
      "\u2068A\u2069 (key 0): 0.5000",
      "click: select",
    ]);
  });
});
