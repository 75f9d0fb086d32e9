import { describe, expect, it } from "vitest";
import {
  ablationColours,
  cellLook,
  deltaClass,
  headState,
  layerLook,
  mapTitleText,
  outputRanges,
  seqAfter,
  statusOf,
} from "../src/views/ablation/state";

const row = (name: string, before: number | null, after: number | null) => ({
  item: "0",
  label: "",
  name,
  before,
  after,
  delta: before !== null && after !== null ? after - before : null,
});

describe("ablation view state", () => {
  it("fills a cell by the scale it keeps and says why", () => {
    const ab = {
      edits: [
        { stack: "self", layer: 0, head: 1, mode: "scale", scale: 0.25 },
        { stack: "self", layer: 1, head: null, mode: "zero", scale: 0 },
        { stack: "self", layer: 0, head: 2, mode: "mean", scale: 0 },
      ],
    };
    const on = cellLook(headState(ab, "self", 0, 0), 0, 0, undefined);
    expect(on).toMatchObject({ background: "var(--aw-abl-on)", text: "", state: "on", pressed: false });
    expect(on.title).toBe("layer 0 · head 0: on (click to disable)");
    const scaled = cellLook(headState(ab, "self", 0, 1), 0, 1, "0");
    expect(scaled.background).toBe("linear-gradient(to top, var(--aw-abl-on) 25%, var(--aw-abl-off) 25%)");
    expect(scaled).toMatchObject({ text: ".25", state: "scale", pressed: true });
    expect(scaled.title).toBe("layer 0 · head 1 · KV head 0: scaled ×0.25");
    const mean = cellLook(headState(ab, "self", 0, 2), 0, 2, undefined);
    expect(mean).toMatchObject({ background: "var(--aw-abl-off)", text: "M", state: "mean" });
    expect(mean.title).toBe("layer 0 · head 2: disabled (mean); click to enable");
    const layerOff = cellLook(headState(ab, "self", 1, 3), 1, 3, undefined);
    expect(layerOff).toMatchObject({ text: "", disabled: true, state: "layer-off", pressed: false });
    expect(layerOff.title).toBe("layer 1 is disabled: enable the layer to edit head 3");
  });

  it("labels a layer button by whether its layer is off", () => {
    expect(layerLook(true, 2, "zero")).toEqual({ text: "layer 2 off", title: "enable layer 2 again" });
    expect(layerLook(false, 2, "mean")).toEqual({
      text: "layer 2",
      title: "disable every head of layer 2 (mean)",
    });
  });

  it("says what the kernel is doing", () => {
    expect(statusOf(true, "boom", 0.5, 12)).toEqual({ state: "running", text: "running…" });
    expect(statusOf(false, "boom", 0.5, 12).state).toBe("error");
    expect(statusOf(false, "", 0.0123, Number.NaN)).toEqual({ state: "idle", text: "model 12 ms" });
    expect(statusOf(false, "", 0.0126, 40.6).text).toBe("round trip 41 ms · model 13 ms");
    expect(statusOf(false, "", undefined, 40)).toEqual({ state: "idle", text: "" });
  });

  it("gives every watched name one bar range over its rows, before and after", () => {
    const ranges = outputRanges([row("cos", 0.5, 0.2), row("p", 2, 3), row("cos", -0.4, null)]);
    expect(ranges.get("cos")).toEqual([-0.4, 0.5]);
    expect(ranges.get("p")).toEqual([0, 3]);
    expect(ranges.size).toBe(2);
  });

  it("colours a change by its sign, a tiny one muted", () => {
    expect(deltaClass(0.00004)).toBe("aw-muted");
    expect(deltaClass(null)).toBe("aw-muted");
    expect(deltaClass(0.001)).toBe("aw-abl-up");
    expect(deltaClass(-0.001)).toBe("aw-abl-down");
  });

  it("captions the maps and picks the lecture colours", () => {
    expect(mapTitleText("self", 1, 2, 0.12345)).toBe("layer 1 · head 2, same colour scale (max 0.123)");
    expect(mapTitleText("cross", 0, 3, 1)).toBe("cross · layer 0 · head 3, same colour scale (max 1.000)");
    expect(ablationColours(true)["--aw-abl-after"]).toBe("#d55e00");
    expect(ablationColours(false)["--aw-abl-on"]).toBe("#6baed6");
  });

  it("numbers a message above the clock and above any answered seq", () => {
    expect(seqAfter(0, 1000, 7)).toBe(1_000_007);
    expect(seqAfter(5_000_000, 1000, 7)).toBe(5_000_001);
  });
});
