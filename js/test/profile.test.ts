import { describe, expect, it } from "vitest";
import { docText, inkFor, stripColumns, unitIndex, unitRange, unitSums } from "../src/views/profile/state";

describe("profile helpers", () => {
  it("adds key weights up per unit like viewdata.profile.unit_sums", () => {
    const w = new Float32Array([0.1, 0.2, 0.3, 0.4]);
    expect(Array.from(unitSums(w, [0, 1, 3])).map((v) => v.toFixed(2))).toEqual(["0.10", "0.50", "0.40"]);
    expect(Array.from(unitIndex([0, 1, 3], 4))).toEqual([0, 1, 1, 2]);
    expect(unitRange([0, 1, 3], 1, 4)).toEqual([1, 3]);
    expect(unitRange([0, 1, 3], 2, 4)).toEqual([3, 4]);
  });
  it("keeps newlines as line breaks and marks other invisible characters", () => {
    expect(docText("a\n\nb")).toBe("a⏎\n⏎\nb");
    expect(docText("x\u202ey")).toBe("x⟨U+202E⟩y");
    expect(docText("<img src=x onerror=alert(1)>")).toBe("<img src=x onerror=alert(1)>");
  });
  it("keeps the largest value per pixel column", () => {
    const cols = stripColumns([1, 5, 2, 0], [0, 1, 2, 3], 4, 2);
    expect(Array.from(cols)).toEqual([5, 2]);
    expect(Array.from(stripColumns([3], [0], 2, 4))).toEqual([3, 3, 3, 3]);
  });
  it("picks readable ink", () => {
    expect(inkFor(8, 48, 107)).toBe("#ffffff");
    expect(inkFor(247, 251, 255)).toBe("#000000");
  });
});
