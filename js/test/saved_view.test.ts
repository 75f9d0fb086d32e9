import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isStatic } from "../src/shared/model";
import { BUNDLES, SAVED_VERSION, checkSaved, savedModel } from "../src/shared/saved_view";

const good = {
  version: 1,
  attnwidgets: "0.1.0",
  widget: "AttentionHeatmap",
  bundle: "heatmap",
  scope: "all",
  state: { _payload: { matrix: { $b64: "AAA=" } }, layer: 0 },
  replies: { '{"what":"matrix"}': { content: { shape: [1] }, buffers: ["AAA="] } },
};

describe("checkSaved", () => {
  it("accepts the format view_mime.py writes", () => {
    const c = checkSaved(good);
    expect(c.ok).toBe(true);
  });

  it("refuses a newer version with a message saying to upgrade", () => {
    const c = checkSaved({ ...good, version: SAVED_VERSION + 1, attnwidgets: "9.0" });
    expect(c.ok).toBe(false);
    if (!c.ok) expect(c.message).toMatch(/newer attnwidgets \(attnwidgets 9\.0\).*Upgrade/);
  });

  it.each([
    ["not an object", "[1]", /not an object/],
    ["no version", JSON.stringify({ ...good, version: "1" }), /no format version/],
    ["an unknown view", JSON.stringify({ ...good, widget: "<img src=x onerror=alert(1)>" }), /does not know/],
    ["a mismatched bundle", JSON.stringify({ ...good, bundle: "qk" }), /does not match/],
    ["a bad scope", JSON.stringify({ ...good, scope: "some" }), /scope/],
    ["no payload", JSON.stringify({ ...good, state: {} }), /no payload/],
    ["bad replies", JSON.stringify({ ...good, replies: { k: { content: 1 } } }), /malformed/],
    ["bad buffers", JSON.stringify({ ...good, replies: { k: { content: {}, buffers: [1] } } }), /base64/],
  ])("refuses %s, whole", (_what, text, why) => {
    const c = checkSaved(JSON.parse(text));
    expect(c.ok).toBe(false);
    if (!c.ok) {
      expect(c.message).toMatch(why);
      expect(c.omitted).toBe(false);
    }
  });

  it("passes on the line of a view left out by the budget", () => {
    const c = checkSaved({
      version: 1,
      widget: "ModelView",
      bundle: "model_view",
      omitted: "over the budget",
    });
    expect(c.ok).toBe(false);
    if (!c.ok) {
      expect(c.omitted).toBe(true);
      expect(c.message).toMatch(/not saved live.*over the budget/);
    }
  });

  it("knows every view's front end", () => {
    // one view class per folder of js/src/views/ (a new view's class was missing here, so its saved state failed)
    const folders = readdirSync(fileURLToPath(new URL("../src/views", import.meta.url)));
    expect(Object.values(BUNDLES).sort()).toEqual(folders.sort());
  });
});

describe("savedModel", () => {
  it("decodes buffers and says it has no kernel", () => {
    const c = checkSaved(good);
    if (!c.ok) throw new Error(c.message);
    const model = savedModel(c.view);
    expect(isStatic(model)).toBe(true);
    const payload = model.get("_payload") as unknown as { matrix: DataView };
    expect(payload.matrix.byteLength).toBe(2);
  });
});
