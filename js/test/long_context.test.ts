import { describe, expect, it } from "vitest";
import { kvHeadNote, overviewNote } from "../src/draw/long_context";
import { kvGroups } from "../src/views/model_view/state";

describe("long-context captions", () => {
  it("says how an overview was reduced and when rows were sampled", () => {
    expect(overviewNote(1, "max", 1)).toBe("");
    expect(overviewNote(16, "mean", 16)).toBe(" · overview (mean of 16×16 blocks; zoom for detail)");
    expect(overviewNote(16, "max", 4)).toBe(
      " · overview (max of 16×16 blocks, 4 of every 16 query rows read; zoom for detail)",
    );
  });
  it("names the KV head of a query head only under GQA", () => {
    expect(kvHeadNote(5, 4)).toBe(" · KV head 1");
    expect(kvHeadNote(5, 1)).toBe("");
    expect(kvHeadNote(-1, 4)).toBe("");
  });
  it("groups heads by key/value head", () => {
    expect(kvGroups(8, 4)).toEqual([
      [0, 3],
      [4, 7],
    ]);
    expect(kvGroups(3, 1)).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
  });
});
