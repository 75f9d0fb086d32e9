import { describe, expect, it } from "vitest";
import { MAX_BOX_CHILDREN, checkBox, isSavedBox } from "../src/shared/saved_box";
import { SAVED_VERSION } from "../src/shared/saved_view";

const box = { version: 1, attnwidgets: "0.1.0", widget: "Box", layout: "row", style: {}, children: [] };

describe("saved boxes (attnwidgets/widgets/boxes.py)", () => {
  it("tells a box from a view", () => {
    expect(isSavedBox(box)).toBe(true);
    expect(isSavedBox({ ...box, widget: "AttentionHeatmap" })).toBe(false);
    expect(isSavedBox(null)).toBe(false);
  });

  it("accepts the format boxes.py writes", () => {
    expect(checkBox(box, SAVED_VERSION)).toBe("");
    expect(checkBox({ ...box, layout: "column", children: [{}, "bogus"] }, SAVED_VERSION)).toBe("");
  });

  it.each([
    [{ ...box, version: SAVED_VERSION + 1 }, /newer attnwidgets.*Upgrade/],
    [{ ...box, version: "1" }, /no format version/],
    [{ ...box, layout: "<img src=x onerror=alert(1)>" }, /neither 'row' nor 'column'/],
    [{ ...box, children: "aw-view-3" }, /not a list/],
    [{ ...box, children: Array(MAX_BOX_CHILDREN + 1).fill({}) }, /more than the 64/],
  ])("refuses a malformed box with a message (%#)", (data, why) => {
    expect(checkBox(data, SAVED_VERSION)).toMatch(why);
  });
});
