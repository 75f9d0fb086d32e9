import { describe, expect, it } from "vitest";
import { absMax, divergingRgb, maskedSoftmax } from "../src/draw/diverging";
import { safeName } from "../src/shared/export";
import { StaticModel, decodeState, fromBase64, requestKey } from "../src/shared/static_model";

describe("diverging scale", () => {
  it("is white at zero and saturated at the ends", () => {
    // matplotlib's RdBu_r at 0.5, 0 and 1 (the stops are generated from it), within 2/255
    const near = (got: number[], want: number[]) =>
      got.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThanOrEqual(2));
    near(divergingRgb("rdbu", 0, 1), [247, 246, 246]);
    near(divergingRgb("rdbu", -1, 1), [5, 48, 97]);
    near(divergingRgb("rdbu", 5, 1), [103, 0, 31]); // clamped
    expect(divergingRgb("puor", Number.NaN, 1)).toEqual(divergingRgb("puor", 0, 1));
  });
  it("absMax ignores non-finite values", () => {
    expect(absMax([1, -3, Number.NaN], new Float32Array([2]))).toBe(3);
  });
  it("maskedSoftmax sums to one over allowed keys only", () => {
    const w = maskedSoftmax([1, 2, 3, 100], [true, true, true, false]);
    expect(w[3]).toBe(0);
    expect(w[0] + w[1] + w[2]).toBeCloseTo(1, 12);
    expect(w[2] / w[1]).toBeCloseTo(Math.E, 10);
    expect(Array.from(maskedSoftmax([1, 2], [false, false]))).toEqual([0, 0]);
  });
});

describe("static model", () => {
  it("computes the same request key as attnwidgets/export.py", () => {
    expect(requestKey({ type: "request", id: 7, what: "matrix", layer: 2, head: -1 })).toBe(
      '{"head":-1,"layer":2,"what":"matrix"}',
    );
  });
  it("decodes base64 buffers nested in state", () => {
    const s = decodeState({ a: { matrix: { buffer: { $b64: "AAECAw==" }, shape: [4] } }, b: [1] });
    const buf = (s.a as { matrix: { buffer: DataView } }).matrix.buffer;
    expect(Array.from(new Uint8Array(buf.buffer))).toEqual([0, 1, 2, 3]);
    expect(fromBase64("/w==").getUint8(0)).toBe(255);
  });
  it("answers saved requests, and unsaved ones with a visible error", async () => {
    let parsed = 0;
    const m = new StaticModel({ head: 0 }, () => {
      parsed++;
      return { '{"head":1,"what":"x"}': { content: { shape: [1] }, buffers: ["AQ=="] } };
    });
    const got: Array<Record<string, unknown>> = [];
    m.on("msg:custom", ((msg: Record<string, unknown>) => got.push(msg)) as never);
    let changed = 0;
    m.on("change:head", (() => changed++) as never);
    m.set("head", 1);
    expect(changed).toBe(1);
    m.send({ type: "request", id: 1, what: "x", head: 1 });
    m.send({ type: "request", id: 2, what: "x", head: 2 });
    await new Promise((r) => setTimeout(r, 5));
    expect(parsed).toBe(1);
    expect(got[0]).toMatchObject({ type: "reply", id: 1, shape: [1] });
    expect(String(got[1].error)).toContain("not saved");
  });
});

describe("safeName", () => {
  it("keeps only file-name characters", () => {
    expect(safeName("all-MiniLM · self attention · layer 2 / <img>")).toBe(
      "all-MiniLM_self_attention_layer_2_img",
    );
    expect(safeName("")).toBe("attention");
  });
});
