import { describe, expect, it } from "vitest";
import { arrowStep, selectHead } from "../src/draw/selection";
import { ownKey } from "../src/shared/dom";

describe("arrowStep", () => {
  it("moves heads with left/right and layers with up/down", () => {
    const at = { layer: 1, head: 2 };
    expect(arrowStep("ArrowRight", at, 4, 6)).toEqual({ layer: 1, head: 3 });
    expect(arrowStep("ArrowLeft", at, 4, 6)).toEqual({ layer: 1, head: 1 });
    expect(arrowStep("ArrowDown", at, 4, 6)).toEqual({ layer: 2, head: 2 });
    expect(arrowStep("ArrowUp", at, 4, 6)).toEqual({ layer: 0, head: 2 });
  });
  it("stays inside the grid", () => {
    expect(arrowStep("ArrowRight", { layer: 3, head: 5 }, 4, 6)).toEqual({ layer: 3, head: 5 });
    expect(arrowStep("ArrowDown", { layer: 3, head: 5 }, 4, 6)).toEqual({ layer: 3, head: 5 });
    expect(arrowStep("ArrowLeft", { layer: 0, head: 0 }, 4, 6)).toEqual({ layer: 0, head: 0 });
    expect(arrowStep("ArrowUp", { layer: 0, head: 0 }, 4, 6)).toEqual({ layer: 0, head: 0 });
  });
  it("a whole-layer selection (head -1) steps to head 0 on the left arrow", () => {
    expect(arrowStep("ArrowLeft", { layer: 2, head: -1 }, 4, 6)).toEqual({ layer: 2, head: 0 });
  });
  it("ignores other keys", () => {
    expect(arrowStep("Enter", { layer: 0, head: 0 }, 4, 6)).toBeNull();
  });
});

describe("selectHead", () => {
  it("sets layer and head, then syncs once", () => {
    const calls: string[] = [];
    const model = {
      get: () => 0,
      set: (k: "layer" | "head", v: number) => calls.push(`${k}=${v}`),
      save_changes: () => calls.push("save"),
    };
    selectHead(model, { layer: 2, head: 5 });
    expect(calls).toEqual(["layer=2", "head=5", "save"]);
  });
});

describe("ownKey", () => {
  const key = (
    k: string,
    mods: Partial<Record<"ctrlKey" | "altKey" | "metaKey" | "shiftKey", boolean>> = {},
  ) => ({
    key: k,
    ctrlKey: false,
    altKey: false,
    metaKey: false,
    shiftKey: false,
    ...mods,
  });
  it("keeps arrows, letters and Enter with a focused menu", () => {
    for (const k of ["ArrowDown", "ArrowLeft", "Home", "b", " ", "Enter"]) expect(ownKey(key(k))).toBe(true);
  });
  it("lets Tab, Escape, Shift+Enter and shortcuts with modifiers through", () => {
    expect(ownKey(key("Tab"))).toBe(false);
    expect(ownKey(key("Escape"))).toBe(false);
    expect(ownKey(key("Enter", { shiftKey: true }))).toBe(false);
    expect(ownKey(key("s", { ctrlKey: true }))).toBe(false);
    expect(ownKey(key("ArrowDown", { metaKey: true }))).toBe(false);
  });
});
