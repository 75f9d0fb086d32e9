import { describe, expect, it } from "vitest";
import { saveTraits } from "../src/shared/model";

describe("saveTraits", () => {
  it("sets every given trait, then syncs once", () => {
    const calls: string[] = [];
    const model = {
      get: () => undefined as never,
      set: (k: string, v: unknown) => calls.push(`${k}=${v}`),
      save_changes: () => calls.push("save"),
      on: () => {},
      off: () => {},
      send: () => {},
    };
    saveTraits<{ a: number; b: string }>(model, { a: 1, b: "x" });
    expect(calls).toEqual(["a=1", "b=x", "save"]);
  });
});
