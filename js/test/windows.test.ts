import { describe, expect, it } from "vitest";
import { kvGroups } from "../src/draw/heads";
import { stepWindow, windowColumns } from "../src/views/head_view/state";
import { keyPos, queryRow } from "../src/views/qk/state";

describe("windows of long inputs", () => {
  it("steps a window by its width inside the input", () => {
    expect(stepWindow([0, 64], 5000, 1)).toEqual([64, 128]);
    expect(stepWindow([4960, 5000], 5000, 1)).toEqual([4960, 5000]);
    expect(stepWindow([10, 74], 5000, -1)).toEqual([0, 64]);
  });

  it("labels a window's columns, far keys last with their position", () => {
    const all = {
      tokens: [
        ["a", "b", "c", "d"],
        ["a", "b", "c", "d"],
      ] as [string[], string[]],
      segments: [
        [0, 0, 1, 1],
        [0, 0, 1, 1],
      ] as [number[], number[]],
    };
    const cols = windowColumns(all, { q: [2, 4], k: [2, 4], far: [0], n: [4, 4] });
    expect(cols.tokens).toEqual([
      ["c", "d"],
      ["c", "d", "#0 a"],
    ]);
    expect(cols.segments).toEqual([
      [1, 1],
      [1, 1, 0],
    ]);
  });

  it("reads a windowed QK payload's one row and key positions", () => {
    const hd = {
      key: "k",
      n: 1,
      m: 3,
      d: 1,
      arrays: {
        q: Float32Array.of(1),
        output: Float32Array.of(2),
        logits: Float32Array.of(1, 2, 3),
        scaled: Float32Array.of(1, 2, 3),
        weights: Float32Array.of(0.2, 0.3, 0.5),
        mask: Float32Array.of(1, 1, 1),
      },
      pos: [10, 11, 0],
      outside: 0.5,
    };
    expect(keyPos(hd, 2)).toBe(0);
    expect(Array.from(queryRow(hd, 11).weights)).toEqual([0.2, 0.3, 0.5].map(Math.fround));
  });
});

describe("GQA groups", () => {
  it("groups query heads by the key/value head they read", () => {
    expect(kvGroups(4, 2)).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(kvGroups(4, 4)).toBeNull();
    expect(kvGroups(4, 0)).toBeNull();
    expect(kvGroups(6, 4)).toBeNull();
  });
});
