import { describe, expect, it } from "vitest";
import { Requester } from "../src/shared/requests";
import { StaticModel, requestKey } from "../src/shared/static_model";

type Listener = (...args: never[]) => void;

/** A kernel stand-in: records what the page sends and answers when told to, as a "msg:custom" event. */
class FakeKernel {
  sent: Array<Record<string, unknown>> = [];
  private listeners = new Map<string, Set<Listener>>();
  get(): never {
    return undefined as never;
  }
  set(): void {}
  save_changes(): void {}
  on(event: string, cb: Listener): void {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event)?.add(cb);
  }
  off(event?: string | null, cb?: Listener | null): void {
    if (event && cb) this.listeners.get(event)?.delete(cb);
  }
  send(content: unknown): void {
    this.sent.push(content as Record<string, unknown>);
  }
  reply(id: unknown, content: Record<string, unknown>, buffers: ArrayBuffer[] = []): void {
    for (const cb of this.listeners.get("msg:custom") ?? [])
      (cb as (...a: unknown[]) => void)({ type: "reply", id, ...content }, buffers);
  }
  listening(): number {
    return this.listeners.get("msg:custom")?.size ?? 0;
  }
}

const HEAD = { what: "matrix", kind: "self", layer: 2, head: 3 };

describe("Requester", () => {
  it("keeps a fetched head: asking again is answered from the page, with no second request", async () => {
    const kernel = new FakeKernel();
    const r = new Requester(kernel);
    const first = r.get("self/2/3", HEAD);
    const again = r.get("self/2/3", HEAD); // asked again while the first is in flight: the same promise
    expect(again).toBe(first);
    expect(kernel.sent).toHaveLength(1);
    expect(kernel.sent[0]).toMatchObject({ ...HEAD, type: "request", id: 1 });
    const buffer = new Float32Array([0.5, 0.5]).buffer;
    kernel.reply(1, { shape: [1, 2], dtype: "float32" }, [buffer]);
    const reply = await first;
    expect(reply.content).toMatchObject({ shape: [1, 2], dtype: "float32" });
    expect(reply.buffers[0]).toBe(buffer);
    // Later, after the answer: still no new request, and the very same reply.
    expect(r.has("self/2/3")).toBe(true);
    expect(await r.get("self/2/3", HEAD)).toBe(reply);
    expect(kernel.sent).toHaveLength(1);
    // Another head is another request.
    r.get("self/2/4", { ...HEAD, head: 4 });
    expect(kernel.sent).toHaveLength(2);
    expect(kernel.sent[1].id).toBe(2);
  });

  it("forgets a failed request, so asking again asks the kernel again", async () => {
    const kernel = new FakeKernel();
    const r = new Requester(kernel);
    const p = r.get("self/9/0", { ...HEAD, layer: 9 });
    kernel.reply(1, { error: "IndexError: layer 9 is out of range" });
    await expect(p).rejects.toThrow(/out of range/);
    expect(r.has("self/9/0")).toBe(false);
    r.get("self/9/0", { ...HEAD, layer: 9 });
    expect(kernel.sent).toHaveLength(2);
  });

  it("clear() forgets every answer; ask() never caches; dispose() stops listening", async () => {
    const kernel = new FakeKernel();
    const r = new Requester(kernel);
    const p = r.get("k", HEAD);
    kernel.reply(1, {});
    await p;
    r.clear();
    expect(r.has("k")).toBe(false);
    r.get("k", HEAD);
    expect(kernel.sent).toHaveLength(2);
    r.ask({ what: "apply" });
    r.ask({ what: "apply" });
    expect(kernel.sent).toHaveLength(4);
    expect(kernel.listening()).toBe(1);
    r.dispose();
    expect(kernel.listening()).toBe(0);
  });

  it("in a saved page, a head is read from the saved replies once and then kept", async () => {
    let parsed = 0;
    const saved = {
      [requestKey(HEAD)]: { content: { shape: [1, 1], dtype: "float32" }, buffers: ["AAAAPw=="] }, // 0.5
    };
    const model = new StaticModel({}, () => {
      parsed++;
      return saved;
    });
    const sent: unknown[] = [];
    const send = model.send.bind(model);
    model.send = (content: unknown) => {
      sent.push(content);
      send(content);
    };
    const r = new Requester(model);
    const reply = await r.get("self/2/3", HEAD);
    expect(new DataView((reply.buffers[0] as DataView).buffer).getFloat32(0, true)).toBe(0.5);
    expect(await r.get("self/2/3", HEAD)).toBe(reply);
    expect(sent).toHaveLength(1);
    expect(parsed).toBe(1);
    await expect(r.get("self/5/0", { ...HEAD, layer: 5, head: 0 })).rejects.toThrow(/not saved/);
  });
});
